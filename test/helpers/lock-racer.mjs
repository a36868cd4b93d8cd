// A worker thread of test/store/dir-lock-race.test.ts: takes part in every round of the race for
// a stale lock (one directory a round), all the workers set off at once by a shared counter.
// workerData: { module (dir-lock.ts), dirs, workers, shared }; shared[0] counts the workers done
// with each round, shared[1 + round] how many of them got the lock in that round.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { DirLock } = await import(workerData.module);
const { dirs, workers } = workerData;
const shared = new Int32Array(workerData.shared);
// Busy-waiting, not Atomics.wait: the workers start each round within microseconds of each other.
const until = (count) => { while (Atomics.load(shared, 0) < count) { /* spin */ } };

Atomics.add(shared, 0, 1);
until(workers);
for (let round = 0; round < dirs.length; round++) {
  let lock;
  try {
    lock = DirLock.acquire(dirs[round]);
  } catch (err) {
    if (err.name !== 'LockHeldError') throw err;
  }
  if (lock) Atomics.add(shared, 1 + round, 1);
  Atomics.add(shared, 0, 1);
  // Held until every worker has tried: one released early would be free to take, and rightly taken.
  until((round + 2) * workers);
  lock?.release();
}
