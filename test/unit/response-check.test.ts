import { expect } from 'chai';
import { z } from 'zod';
import { answerCheck, rewrites } from '../../src/platform/api/answer-check';
import { InternalError } from '../../src/platform/errors';

describe('response schemas that rewrite what they accept', () => {
  it('finds a default, transform, pipe, catch or coercion anywhere in the schema', () => {
    expect(rewrites(z.object({ a: z.string(), b: z.array(z.object({ c: z.number().nullable() })) }))).to.equal(false);
    expect(rewrites(z.object({ a: z.array(z.object({ b: z.boolean().default(false) })) }))).to.equal(true);
    expect(rewrites(z.object({ a: z.string().transform((s) => s.trim()) }))).to.equal(true);
    expect(rewrites(z.union([z.object({ a: z.string() }), z.object({ b: z.coerce.number() })]))).to.equal(true);
    expect(rewrites(z.record(z.string(), z.string().catch('x')))).to.equal(true);
    expect(rewrites(z.object({ a: z.string().optional(), b: z.enum(['x', 'y']) }))).to.equal(false);
  });

  it('walks recursive schemas without looping', () => {
    type Tree = { name: string; children: Tree[] };
    const tree: z.ZodType<Tree> = z.lazy(() => z.object({ name: z.string(), children: z.array(tree) }));
    expect(rewrites(tree)).to.equal(false);
  });
});

describe('answerCheck: one rule for a route response and a tool output', () => {
  const plain = z.object({ id: z.string() });

  it('checks a plain schema only where answers are checked, and sends the answer as the handler made it', () => {
    expect(answerCheck(plain, 'output of t', false)).to.equal(undefined);
    const check = answerCheck(plain, 'output of t', true)!;
    const answer = { id: 'a' };
    expect(check(answer)).to.equal(answer);
    expect(() => check({ id: 1 })).to.throw(InternalError, 'output of t does not match its schema');
    expect(() => check({ id: 'a', secret: 'x' })).to.throw(
      InternalError,
      'output of t has a field its schema strips: $.secret',
    );
  });

  it('shapes every answer of a schema that rewrites, checked or not', () => {
    const withDefault = z.object({ id: z.string(), tags: z.array(z.string()).default([]) });
    for (const validate of [true, false]) {
      expect(answerCheck(withDefault, 'output of t', validate)!({ id: 'a' })).to.deep.equal({ id: 'a', tags: [] });
    }
  });
});
