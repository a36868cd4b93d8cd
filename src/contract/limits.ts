/** The largest request body the service reads (1 MiB): more is refused with 413 `ERR_PAYLOAD_TOO_LARGE`. */
export const BODY_LIMIT = 1024 * 1024;
