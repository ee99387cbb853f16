/**
 * The service's one bound on the length of what a client names a counter with, the same on
 * every door (`--max-key-length`): a JSON check's `key` (400 `key-too-long`), a forward-auth
 * key, and each gRPC descriptor entry's key and value (RESOURCE_EXHAUSTED, refused while
 * decoding). No client can make the store, the metrics or the status page hold long strings.
 */

/** Default `--max-key-length`, in UTF-8 bytes. */
export const DEFAULT_MAX_KEY_LENGTH = 512;
