/** A promise with the functions that settle it; see {@link deferred}. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

const noop = () => {};

/** A promise and the functions that settle it, whose rejection nobody has to look at. */
export function deferred<T>(): Deferred<T> {
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  promise.catch(noop); // the caller may never look; rejection then must not crash the process
  return { promise, resolve, reject };
}
