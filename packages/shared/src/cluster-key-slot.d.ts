// cluster-key-slot ships no types: the Redis Cluster hash slot of a key (its hash tag's, if any).
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
