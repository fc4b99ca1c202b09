/**
 * Spaces starts to at most `perSec` a second with bursts of up to `burst` at once (the generic cell
 * rate algorithm: one "theoretical arrival time" instead of a bucket of tokens that must be
 * refilled). `waitMs()` says how long until a start may go, without booking it; `reserve()` books
 * one start and says how long its caller must wait for it.
 */
export class RateGate {
  /** Lowest rate accepted: one start in 1,000 s (a timer can wait that long). */
  static readonly MIN_PER_SEC = 0.001;
  /** When the next start would be due if starts went exactly `1000 / perSec` ms apart. */
  private tat = -Infinity;
  private readonly intervalMs: number;

  constructor(
    readonly perSec: number,
    readonly burst = 1,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    if (!(perSec >= RateGate.MIN_PER_SEC) || !Number.isFinite(perSec))
      throw new RangeError(`rate: perSec must be a number >= ${RateGate.MIN_PER_SEC}, got ${perSec}`);
    if (!Number.isInteger(burst) || burst < 1)
      throw new RangeError(`rate: burst must be a positive integer, got ${burst}`);
    this.intervalMs = 1000 / perSec;
  }

  /** Milliseconds until one more start may go (0: now); books nothing. */
  waitMs(): number {
    const now = this.nowMs();
    return Math.max(0, Math.max(this.tat, now) - now - (this.burst - 1) * this.intervalMs);
  }

  /** Books one start; returns the milliseconds to wait before it (0: go now). */
  reserve(): number {
    const wait = this.waitMs();
    this.tat = Math.max(this.tat, this.nowMs()) + this.intervalMs;
    return wait;
  }
}
