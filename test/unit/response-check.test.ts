import { expect } from 'chai';
import { z } from 'zod';
import { rewrites } from '../../src/platform/api/answer-check';

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
