/** The largest request body the service reads (1 MiB): more is refused with 413 `ERR_PAYLOAD_TOO_LARGE`. */
export const BODY_LIMIT = 1024 * 1024;

/**
 * The most bytes of embedded children (an edge's routes, as stored JSON text plus a little per
 * row) one list page holds: a page of edges ends early, with `next_page_uri`, before it would hold
 * more. One object's own children are bounded by its kind (`perParent`), so a page always holds one.
 */
export const LIST_PAGE_BYTES = 16 * 1024 * 1024;

/**
 * How deep a request body's arrays and objects may nest (32 levels): the API's deepest field is a
 * few levels down, and a body of nothing but brackets must not cost more than its bytes.
 */
export const MAX_BODY_DEPTH = 32;
