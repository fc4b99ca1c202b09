/**
 * Spaces starts to at most `perSec` a second with bursts of up to `burst` at once (the generic cell
 * rate algorithm: one "theoretical arrival time" instead of a bucket of tokens that must be
 * refilled). Each `reserve()` books the next start and says how long its caller must wait for it,
 * so callers that wait in parallel are still spaced out, in the order they asked.
 */
export class RateGate {
  /** When the next start would be due if starts went exactly `1000 / perSec` ms apart. */
  private tat = -Infinity;
  private readonly intervalMs: number;

  constructor(
    readonly perSec: number,
    readonly burst = 1,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    if (!(perSec > 0) || !Number.isFinite(perSec))
      throw new RangeError(`rate: perSec must be a positive number, got ${perSec}`);
    if (!Number.isInteger(burst) || burst < 1)
      throw new RangeError(`rate: burst must be a positive integer, got ${burst}`);
    this.intervalMs = 1000 / perSec;
  }

  /** Books one start; returns the milliseconds to wait before it (0: go now). */
  reserve(): number {
    const now = this.nowMs();
    const tat = Math.max(this.tat, now);
    this.tat = tat + this.intervalMs;
    return Math.max(0, tat - now - (this.burst - 1) * this.intervalMs);
  }
}
