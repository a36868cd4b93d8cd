export interface LoopResponse { status: number; headers: Record<string, string>; text: string }
export type ListMessage = { id: number; url: string } | { cancel: number };
/** See page-loop.mjs. */
export function pageLoop(get: (url: string) => Promise<LoopResponse>, follows: (url: string) => boolean, post: (m: unknown) => void): (m: ListMessage) => void;
