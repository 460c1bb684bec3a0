/**
 * The few `Reflect` metadata functions `@peculiar/x509`'s dependency injection container
 * (tsyringe) checks for at import; it registers its services without decorator metadata, so a
 * plain per-object map is enough. Imported before `@peculiar/x509`.
 */
type Meta = Map<unknown, unknown>;
const store = new WeakMap<object, Meta>();
const R = Reflect as unknown as Record<string, unknown>;

if (typeof R.getMetadata !== 'function') {
  const own = (target: object, create: boolean): Meta | undefined => {
    let m = store.get(target);
    if (!m && create) store.set(target, (m = new Map()));
    return m;
  };
  R.defineMetadata = (key: unknown, value: unknown, target: object) => void own(target, true)!.set(key, value);
  R.getOwnMetadata = (key: unknown, target: object) => own(target, false)?.get(key);
  R.hasOwnMetadata = (key: unknown, target: object) => own(target, false)?.has(key) ?? false;
  R.getMetadata = (key: unknown, target: object): unknown => {
    for (let t: object | null = target; t; t = Object.getPrototypeOf(t) as object | null) {
      const m = own(t, false);
      if (m?.has(key)) return m.get(key);
    }
    return undefined;
  };
  R.hasMetadata = (key: unknown, target: object) =>
    R.getMetadata !== undefined && (R.getMetadata as (k: unknown, t: object) => unknown)(key, target) !== undefined;
  R.metadata = () => () => undefined;
}
