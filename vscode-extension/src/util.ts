/** Small helpers with no VS Code dependency. */

export interface Cancellable {
  cancel(): void;
  dispose(): void;
}

/** Calls `fn` once `ms` after the last `trigger`. */
export class Debouncer {
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly ms: number,
    private readonly fn: () => void,
  ) {}

  trigger(): void {
    this.cancel();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.fn();
    }, this.ms);
  }

  get pending(): boolean {
    return this.timer !== undefined;
  }

  cancel(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}

/**
 * Runs requests so that only the newest one counts: starting one cancels the one before,
 * and a superseded request's result is dropped (resolves to `undefined`).
 */
export class LatestOnly<Token extends Cancellable> {
  private current: Token | undefined;
  private generation = 0;

  constructor(private readonly makeToken: () => Token) {}

  async run<T>(work: (token: Token) => Promise<T>): Promise<{ value: T } | undefined> {
    this.cancel();
    const token = this.makeToken();
    this.current = token;
    const generation = ++this.generation;
    try {
      const value = await work(token);
      return generation === this.generation ? { value } : undefined;
    } catch (err) {
      if (generation !== this.generation) {
        return undefined;
      }
      throw err;
    } finally {
      if (this.current === token) {
        this.current = undefined;
      }
      token.dispose();
    }
  }

  cancel(): void {
    if (this.current) {
      this.current.cancel();
      this.current = undefined;
    }
    this.generation++;
  }
}

/** A JSON-RPC error's code, when `err` is one. */
export function errorCode(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err).code;
    return typeof code === 'number' ? code : undefined;
  }
  return undefined;
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  if (typeof err === 'object' && err !== null && 'message' in err) {
    return String((err).message);
  }
  return String(err);
}

export function makeNonce(random: (n: number) => Uint8Array): string {
  return Buffer.from(random(18)).toString('base64').replace(/[^A-Za-z0-9]/g, 'x');
}
