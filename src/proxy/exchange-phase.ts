/**
 * Where an exchange stands, in the order an attempt meets them; a replay goes back to
 * `waiting-token` or `sending`, a retry to `sending`, and every path ends in `done`:
 * - `waiting-token`: no attempt in flight; a token is being fetched (first send, or a replay's);
 * - `sending`: handed to the pool, not yet to a connection: the gateway cannot have it;
 * - `awaiting-head`: on a connection, no byte of its answer yet: the gateway may have it;
 * - `interim-answer`: a 1xx head arrived, the final one has not;
 * - `dropping-401`: a 401 the request is replayed after: its body is read and dropped;
 * - `streaming-answer`: the head went to the caller; the body streams;
 * - `done`: ended, one way or another: nothing more is written or recorded.
 */
export type Phase = 'waiting-token' | 'sending' | 'awaiting-head' | 'interim-answer' | 'dropping-401' | 'streaming-answer' | 'done';
