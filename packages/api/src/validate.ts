import type { z } from 'zod';
import { ProblemError } from './problem.js';

function issuesOf(error: z.ZodError) {
  return error.issues.map((i) => ({ path: i.path.map(String).join('.') || '(root)', message: i.message }));
}

/** Parses a request body with `schema`, or throws a 422 `validation_failed` listing every field issue. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success)
    throw new ProblemError('validation_failed', `the request body is not a valid ${what}`, {
      extensions: { errors: issuesOf(parsed.error) },
    });
  return parsed.data;
}

/** Parses a query string with `schema`, or throws a 400 `invalid_query` listing every parameter issue. */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown): z.infer<S> {
  const parsed = schema.safeParse(query);
  if (!parsed.success)
    throw new ProblemError('invalid_query', 'the query parameters are not valid', { extensions: { errors: issuesOf(parsed.error) } });
  return parsed.data;
}
