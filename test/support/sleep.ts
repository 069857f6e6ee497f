/**
 * The one fixed wait of the suites, for the few waits whose length is the point: a fault that
 * lasts so long, a deliberate idle period in which something must NOT happen, or time a rule needs
 * to pass (a rate window, a lease, a timer). Never use it to wait for something to happen: wait
 * for that itself with `eventually` (./eventually.ts) or for its event. Each call says why.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
