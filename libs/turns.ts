/**
 * Tasks that take turns by key within this process: those given for one key run one after
 * another, in the order given, whether the one before succeeded or failed; other keys' run
 * alongside.
 *
 * For appending to a sequence whose next number is taken by insert (an owner's list, a
 * wallet's entries; decision 16): writers in one process that race for the same number all but
 * one lose, and on FerretDB each losing insert waits for the database's one write lock as a
 * winning one does. Taking turns leaves only other replicas' writers to race with; the insert
 * still decides, so a process that does not take turns stays correct (decision 91).
 */
export class Turns {
  /** Per key, the end of the last task given: a promise that never rejects. */
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key);
    const result = before ? before.then(task) : task();
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with a task under way or waiting (for tests: none is kept once its tasks are done). */
  get busyKeys(): number {
    return this.tails.size;
  }
}
