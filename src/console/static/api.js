// Every call goes to this origin's public /v1 API with the pasted credential: the console can do
// nothing the API would not allow that credential to do.
const KEY = 'weft.console.credential';

export const credential = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An answer other than 2xx, with the contract's `detail` made readable. */
export class ApiError extends Error {
  constructor(status, body) {
    super(detailText(body) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** `{detail}` is a string, a list of 422 issues, or an object (402); each becomes one line of text. */
export function detailText(body) {
  const detail = body && typeof body === 'object' ? body.detail : body;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) return detail.map((issue) => `${(issue.loc || []).join('.')}: ${issue.msg}`).join('; ');
  if (detail && typeof detail === 'object') return detail.message || detail.error || JSON.stringify(detail);
  return '';
}

let onUnauthorized = () => {};
/** Called when the API refuses the stored credential (401): the app goes back to the sign-in form. */
export const whenUnauthorized = (handler) => {
  onUnauthorized = handler;
};

/** One API call; resolves to the parsed body, rejects with ApiError. */
export async function api(method, path, body, token = credential.get()) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let parsed = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON (a proxy's error page): keep the text.
  }
  if (!response.ok) {
    const error = new ApiError(response.status, parsed);
    if (response.status === 401 && token === credential.get()) onUnauthorized(error);
    throw error;
  }
  return parsed;
}

export const query = (params) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(key, value);
  const text = search.toString();
  return text ? `?${text}` : '';
};
