/**
 * At most `perSecond` grants in any trailing 1.1 s window (22 slots of 50 ms), so a rate measured
 * over any second — even in another clock, such as the database's — never exceeds the limit,
 * unlike a token bucket, which allows its burst on top. The 10% margin absorbs slot granularity and
 * clock differences. Reads the clock through `now` (a parameter for tests). Per process.
 */
export class RateWindow {
  private static readonly SLOTS = 22;
  private static readonly SLOT_MS = 50;
  private readonly counts = new Array<number>(RateWindow.SLOTS).fill(0);
  private slot: number;

  constructor(
    private readonly perSecond: number,
    private readonly now: () => number = Date.now,
  ) {
    this.slot = Math.floor(now() / RateWindow.SLOT_MS);
  }

  /** Grants up to `want`; returns how many. */
  take(want: number): number {
    const got = Math.max(0, Math.min(want, this.available()));
    this.counts[this.slot % RateWindow.SLOTS]! += got;
    return got;
  }

  /** How many `take` would grant now (nothing is taken). */
  available(): number {
    this.roll();
    return Math.max(0, this.perSecond - this.counts.reduce((a, b) => a + b, 0));
  }

  /** Gives back grants that were not used (in the current slot). */
  refund(n: number): void {
    const i = this.slot % RateWindow.SLOTS;
    this.counts[i] = Math.max(0, this.counts[i]! - n);
  }

  private roll(): void {
    const current = Math.floor(this.now() / RateWindow.SLOT_MS);
    for (let s = Math.max(this.slot + 1, current - RateWindow.SLOTS + 1); s <= current; s++)
      this.counts[s % RateWindow.SLOTS] = 0;
    this.slot = current;
  }
}
