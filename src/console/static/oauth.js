// The OAuth consent page (/console/oauth): /oauth/authorize sends the browser here with the client's
// authorization request in the query. The person signs in with a user JWT, picks a workspace and
// answers; the API (POST /v1/oauth/consent) checks everything again and says where to send the browser.
import { api, credential } from './api.js';
import { fill, h } from './dom.js';

const $ = (id) => document.getElementById(id);
const request = Object.fromEntries(new URLSearchParams(location.search));

function fail(message) {
  $('error').hidden = false;
  $('error').textContent = message;
}

async function showConsent() {
  const [client, workspaces] = await Promise.all([
    api('GET', `/v1/oauth/clients/${encodeURIComponent(request.client_id || '')}`),
    api('GET', '/v1/oauth/workspaces'),
  ]);
  $('client-name').textContent = client.client_name || client.client_id;
  try {
    $('redirect-host').textContent = new URL(request.redirect_uri).host || request.redirect_uri;
  } catch {
    $('redirect-host').textContent = String(request.redirect_uri);
  }
  fill($('workspace'), ...workspaces.map((w) => h('option', { value: w.id }, `${w.name} (${w.id.slice(0, 8)})`)));
  const asked = (request.scope || '').split(' ').filter(Boolean);
  const scopes = asked.length ? client.scopes.filter((scope) => asked.includes(scope)) : client.scopes;
  fill($('scopes'), ...scopes.map((scope) => h('li', {}, h('code', {}, scope))));
  $('sign-in').hidden = true;
  $('consent').hidden = false;
}

async function answer(decision) {
  for (const id of ['approve', 'deny']) $(id).disabled = true;
  try {
    const { redirect_to } = await api('POST', '/v1/oauth/consent', {
      ...request,
      workspace_id: $('workspace').value,
      decision,
    });
    location.assign(redirect_to);
  } catch (error) {
    fail(`The answer was refused: ${error.message}`);
    for (const id of ['approve', 'deny']) $(id).disabled = false;
  }
}

$('sign-in-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  credential.set($('credential').value.trim());
  $('credential').value = '';
  showConsent().catch((error) => fail(`Sign-in failed: ${error.message}`));
});
$('approve').addEventListener('click', () => answer('approve'));
$('deny').addEventListener('click', () => answer('deny'));
if (credential.get()) showConsent().catch((error) => fail(error.message));
