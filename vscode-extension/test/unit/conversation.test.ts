import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { askedQuestions, before, recall, titleOf, turnsOf, type Entry } from '../../src/conversation';

const q = (text: string): Entry => ({ kind: 'question', text });
const a = (answer: string, stop: 'answer' | 'error' | 'cancelled' = 'answer'): Entry => ({
  kind: 'answer',
  response: { answer, sources: [], stop, steps: [], usage: {} },
});
const step: Entry = { kind: 'step' };

describe('a conversation as the server and the history take it', () => {
  const talk: Entry[] = [q('When is the cut-off?'), step, a('14:30.'), q('And if I miss it?'), a('Next day.'), q('Brazil?'), a('Server down', 'error')];

  it('has turns of questions and the answers that followed them', () => {
    assert.deepEqual(turnsOf(talk), [
      { question: 'When is the cut-off?', answer: '14:30.' },
      { question: 'And if I miss it?', answer: 'Next day.' },
      { question: 'Brazil?', answer: '' }, // a failed answer is no answer to go on from
    ]);
    const passages: Entry = { kind: 'answer', response: { answer: 'No model: here are the passages', sources: [], stop: 'answer', mode: 'fallback', steps: [], usage: {} } };
    assert.deepEqual(turnsOf([q('Deploys?'), passages]), [{ question: 'Deploys?', answer: '' }], 'passages when no model answered are no answer either');
  });

  it('keeps what comes before the question asked again (Regenerate, edit and resend)', () => {
    const last = before(talk, 2);
    assert.deepEqual(last?.kept, talk.slice(0, 5));
    assert.deepEqual(last?.question, q('Brazil?'));
    assert.deepEqual(turnsOf(last?.kept ?? []), turnsOf(talk).slice(0, 2));
    assert.deepEqual(before(talk, 0)?.kept, []);
    assert.equal(before(talk, 3), undefined);
  });

  it('is titled by its first question, and recalls the questions asked with ↑ and ↓', () => {
    assert.equal(titleOf([step, q('  How   do I\ndeploy? '), q('Then?')]), 'How do I deploy?');
    const asked = askedQuestions([q('one'), a('1'), q('one'), q('two')]);
    assert.deepEqual(asked, ['one', 'two']);
    let at = asked.length;
    const keys: ('ArrowUp' | 'ArrowDown')[] = ['ArrowUp', 'ArrowUp', 'ArrowUp', 'ArrowDown', 'ArrowDown'];
    const seen = keys.map((key) => {
      const moved = recall(asked, at, key);
      at = moved.at;
      return moved.text;
    });
    assert.deepEqual(seen, ['two', 'one', 'one', 'two', '']);
  });
});
