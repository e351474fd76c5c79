import { api, credential, whenUnauthorized } from './api.js';
import { approvalsView } from './approvals.js';
import { connectorsView } from './connectors.js';
import { creditsView } from './credits.js';
import { fill } from './dom.js';
import { graphView } from './graph.js';
import { mergesView } from './merges.js';
import { runsView } from './runs.js';
import { schedulesView } from './schedules.js';

const VIEWS = {
  approvals: approvalsView,
  merges: mergesView,
  runs: runsView,
  schedules: schedulesView,
  connectors: connectorsView,
  graph: graphView,
  credits: creditsView,
};

const $ = (id) => document.getElementById(id);
let stopView = () => {};

/** `#/runs/<id>` → view `runs` with argument `<id>`; anything unknown is the approvals inbox. */
function route() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const view = Object.hasOwn(VIEWS, name) ? name : 'approvals';
  return { view, arg: rest.length ? decodeURIComponent(rest.join('/')) : undefined };
}

function render() {
  if (!credential.get()) return showSignIn();
  stopView();
  const { view, arg } = route();
  for (const link of document.querySelectorAll('#nav a')) {
    link.classList.toggle('active', link.dataset.view === view);
  }
  const main = fill($('view'));
  main.dataset.view = view;
  stopView = VIEWS[view](main, arg) || (() => {});
}

function showSignIn(message) {
  stopView();
  stopView = () => {};
  $('view').hidden = true;
  $('nav').hidden = true;
  $('sign-out').hidden = true;
  $('sign-in').hidden = false;
  const error = $('sign-in-error');
  error.hidden = !message;
  error.textContent = message || '';
  $('credential').focus();
}

function showApp() {
  $('sign-in').hidden = true;
  $('view').hidden = false;
  $('nav').hidden = false;
  $('sign-out').hidden = false;
  render();
}

/** A credential is accepted when the API answers an authenticated read that needs no particular scope. */
async function signIn(event) {
  event.preventDefault();
  const token = $('credential').value.trim();
  if (!token) return;
  const button = event.target.querySelector('button');
  button.disabled = true;
  try {
    await api('GET', '/v1/auth/me/api-keys/scopes', undefined, token);
    credential.set(token);
    $('credential').value = '';
    showApp();
  } catch (error) {
    const why = error.status ? `${error.message} (HTTP ${error.status})` : `the API could not be reached: ${error}`;
    showSignIn(`Sign-in failed: ${why}`);
  } finally {
    button.disabled = false;
  }
}

whenUnauthorized((error) => {
  credential.clear();
  showSignIn(`Your credential was refused: ${error.message}. Sign in again.`);
});

$('sign-in-form').addEventListener('submit', signIn);
$('sign-out').addEventListener('click', () => {
  credential.clear();
  showSignIn();
});
window.addEventListener('hashchange', () => {
  if (credential.get()) render();
});
if (credential.get()) showApp();
else showSignIn();
