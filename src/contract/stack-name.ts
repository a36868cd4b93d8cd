/** Stack names (`--stack`, `edgeplane.yaml`, the sync record's paths): what a marker's `stack` must be. */
export const STACK_NAME = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/;
