/** Small caches for reads that may be a moment old. */

/** `load(key)` remembered for `ms` of real time per key (a hit costs no query). */
export function cachedFor<T>(ms: number, load: (key: string) => Promise<T>): (key: string) => Promise<T> {
  const cache = new Map<string, { at: number; value: Promise<T> }>();
  return (key) => {
    const now = Date.now();
    const hit = cache.get(key);
    if (hit && now - hit.at < ms) return hit.value;
    if (cache.size > 10_000) cache.clear();
    const value = load(key);
    cache.set(key, { at: now, value });
    value.catch(() => cache.delete(key));
    return value;
  };
}
