/**
 * "no model" ends when a model answers. The server probes the model when it starts and
 * when the settings change; an answer that came from the model is newer news than that
 * probe. So once a model answered, its status reads reachable — in the status bar and
 * the panel header — until an ask falls back without it or the model settings change.
 */
import type { AskResponse, IndexStatus, LlmStatus } from './protocol';

export class AnsweredModel {
  private answered: { host: string; model: string } | undefined;

  /** An ask came back; `llm` is the model it was sent to. */
  note(response: Pick<AskResponse, 'mode' | 'stop'>, llm: LlmStatus | undefined): void {
    if (response.mode === 'fallback' || response.stop === 'error' || !llm) {
      this.answered = undefined; // the model failed this time: the probe's word stands
      return;
    }
    this.answered = { host: llm.host, model: llm.model };
  }

  /** The model settings changed: what was known about the model no longer holds. */
  forget(): void {
    this.answered = undefined;
  }

  /** `status`, reachable when its model is the one that answered. */
  apply(status: IndexStatus): IndexStatus {
    const llm = status.llm;
    const answered = this.answered;
    return answered && llm.reachable === false && llm.host === answered.host && llm.model === answered.model
      ? { ...status, llm: { ...llm, reachable: true } }
      : status;
  }
}
