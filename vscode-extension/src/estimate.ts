/**
 * How long the running sync has left, from the rate of a recent window of its progress
 * (not the run's average: the rate of the last minutes is what the next minutes will do).
 * Each phase is measured in its own unit — files while reading, passages while
 * embedding — and starts afresh. A server that sends its own estimate
 * (`progress.secondsLeft`, not in the wire contract yet) is taken as it is.
 *
 * Pure: the caller gives the clock.
 */
import type { IndexProgress, IndexStatus } from './protocol';

/** Seconds of progress the rate is measured over. */
export const WINDOW_SECONDS = 180;
/** No estimate until the samples span this long: a first batch says little. */
export const MIN_SPAN_SECONDS = 15;

interface Sample {
  at: number;
  done: number;
}

/** The server's own estimate, once it sends one (a number of seconds). */
export function serverEstimate(progress: IndexProgress | null | undefined): number | undefined {
  const value = (progress as { secondsLeft?: unknown } | null | undefined)?.secondsLeft;
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** The unit a phase counts, done and total: passages while embedding (when counted), else files. */
export function phaseCount(progress: IndexProgress): { key: string; done: number; total: number } | undefined {
  if (progress.phase === 'scanning' || progress.filesTotal === 0) {
    return undefined;
  }
  if (progress.phase === 'vectors' && progress.chunksTotal) {
    return { key: `vectors:${progress.chunksTotal}`, done: progress.chunksDone ?? 0, total: progress.chunksTotal };
  }
  return { key: `${progress.phase}:${progress.filesTotal}`, done: progress.filesDone, total: progress.filesTotal };
}

export class RateEstimator {
  private key: string | undefined;
  private samples: Sample[] = [];

  /** Take a status seen at `now` (seconds). */
  observe(status: IndexStatus | undefined, now: number): void {
    const progress = status?.state === 'indexing' ? status.progress : undefined;
    const counted = progress ? phaseCount(progress) : undefined;
    if (!counted || status?.paused) {
      // A pause breaks the rate: after it, measure again.
      this.key = undefined;
      this.samples = [];
      return;
    }
    if (counted.key !== this.key) {
      this.key = counted.key;
      this.samples = [];
    }
    const last = this.samples.at(-1);
    if (last && counted.done <= last.done) {
      return; // the same count again: the time it stood still shows in the next sample
    }
    this.samples.push({ at: now, done: counted.done });
    // Keep the window, and the one sample before it so sparse updates still span it.
    while (this.samples.length > 2 && (this.samples[1]?.at ?? now) <= now - WINDOW_SECONDS) {
      this.samples.shift();
    }
  }

  /** Seconds left at `now`, or undefined while there is no fair measure yet. */
  secondsLeft(status: IndexStatus | undefined, now: number): number | undefined {
    const progress = status?.state === 'indexing' && !status.paused ? status.progress : undefined;
    if (!progress) {
      return undefined;
    }
    const fromServer = serverEstimate(progress);
    if (fromServer !== undefined) {
      return fromServer;
    }
    const counted = phaseCount(progress);
    const first = this.samples[0];
    const last = this.samples.at(-1);
    if (!counted || counted.key !== this.key || !first || !last || last.at - first.at < MIN_SPAN_SECONDS) {
      return undefined;
    }
    const gained = last.done - first.done;
    if (gained <= 0) {
      return undefined;
    }
    // The rate up to now, not up to the last step: numbers that stand still (one slow
    // batch) make the estimate grow until they move, never run down to 0.
    return ((counted.total - counted.done) * (now - first.at)) / gained;
  }
}
