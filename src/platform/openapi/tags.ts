/**
 * The tags of the document's own routes. Every other tag is described by the feature that owns it
 * (`tags` in its `feature.ts`); the document declares the tags its routes use, with these
 * descriptions, and refuses a route whose tag nobody describes.
 */
export const OPENAPI_TAGS = {
  meta: 'The OpenAPI document and the browsable reference.',
};

/** Tag name → description. */
export type TagDescriptions = Readonly<Record<string, string>>;
