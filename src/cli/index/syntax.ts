import { ts } from 'ts-morph';
import { LIMITS } from '../../rules/limits';

/* Small readers of the syntax tree shared by the parser (./parse.ts, ./symbols.ts) and the resolver. */

const C = LIMITS.code;

export const collapse = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** The `/** … *\/` comment right before a node, without its stars. */
export function docOf(source: ts.SourceFile, node: ts.Node): string | undefined {
  const ranges = ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? [];
  const last = ranges.at(-1);
  if (!last) return undefined;
  const text = source.text.slice(last.pos, last.end);
  if (!text.startsWith('/**')) return undefined;
  const body = text
    .slice(3, -2)
    .split('\n')
    .map((line) => line.replace(/^\s*\*\s?/, ''))
    .join(' ');
  const doc = collapse(body, C.docChars);
  return doc.length > 0 ? doc : undefined;
}

/** The declaration's text up to its body: name, parameters, return type. */
export function signatureOf(source: ts.SourceFile, node: ts.Node, body: ts.Node | undefined): string {
  const end = body ? body.getStart(source) : node.getEnd();
  const text = source.text.slice(node.getStart(source), end).replace(/\s*=>\s*$/, '');
  return collapse(text.replace(/^(export\s+)?(default\s+)?(declare\s+)?/, ''), C.signatureChars);
}

export const lineOf = (source: ts.SourceFile, node: ts.Node) =>
  source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;

export const nameText = (name: ts.Node | undefined): string | undefined =>
  name && (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isPrivateIdentifier(name)) ? name.text : undefined;

/** The expression a call site calls: a call's or `new`'s callee, a tagged template's tag. */
export const calleeOf = (node: ts.Node): ts.Expression | undefined =>
  ts.isCallExpression(node) || ts.isNewExpression(node)
    ? node.expression
    : ts.isTaggedTemplateExpression(node)
      ? node.tag
      : undefined;

/** An expression without the parentheses, `as`, `satisfies` and `!` around it. */
export function unwrap(node: ts.Expression): ts.Expression {
  let inner = node;
  while (
    ts.isParenthesizedExpression(inner) ||
    ts.isAsExpression(inner) ||
    ts.isSatisfiesExpression(inner) ||
    ts.isNonNullExpression(inner) ||
    ts.isTypeAssertionExpression(inner)
  ) {
    inner = inner.expression;
  }
  return inner;
}

export const functionLike = (node: ts.Node | undefined): node is ts.ArrowFunction | ts.FunctionExpression =>
  node !== undefined && (ts.isArrowFunction(node) || ts.isFunctionExpression(node));

/** Where a declaration is, the same in any syntax tree of the same text (the indexer's, the language service's). */
export const spanOf = (node: ts.Node) => `${node.getStart()}:${node.getEnd()}`;
