import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/**
 * An `onRequest` hook from a synchronous check, callback style: no promise or microtask per
 * request (these run on every one); what `check` throws is the request's error.
 */
export function syncHook(check: (req: FastifyRequest) => void) {
  return (req: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    try {
      check(req);
    } catch (err) {
      return done(err as Error);
    }
    done();
  };
}
