import { AsyncLocalStorage } from 'node:async_hooks';
import { type Context, type ContextManager, ROOT_CONTEXT, context } from '@opentelemetry/api';

/**
 * An OpenTelemetry `ContextManager` over Node's `AsyncLocalStorage`: the active context follows
 * async calls. Without one (the API's default is a no-op manager), `context.with` does not make
 * anything active, so code that reads the active span, like the dispatcher's log lines that carry
 * `traceId`, sees none. An OpenTelemetry SDK installs its own; this is for running without one.
 */
export class AsyncLocalContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(ctx, () => fn.call(thisArg, ...args));
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = this.with.bind(this);
    const bound = function (this: unknown, ...args: unknown[]) {
      return run(ctx, () => (target as (...a: unknown[]) => unknown).apply(this, args));
    };
    return bound as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.#storage.disable();
    return this;
  }
}

/**
 * Makes trace context propagate through async code in this process, unless an SDK already
 * registered a context manager (then that one stays). Call once, at the entry point.
 * Returns true when this call installed it.
 */
export function installTraceContext(): boolean {
  return context.setGlobalContextManager(new AsyncLocalContextManager());
}
