import { api } from './api.js';
import { h } from './dom.js';

// Issue 32 part 5: the reviewer edits a step's input in a form generated from its tool's JSON Schema
// (`GET /v1/cap` lists every tool's `input_schema`), one field per property; what the form cannot
// express as a plain field (objects, arrays) is a JSON text area. The API checks the edit again (422).

let tools;
/** The tools' input schemas by name, fetched once per page. */
export function inputSchemas() {
  tools ??= api('GET', '/v1/cap').then(
    ({ tools: list }) => new Map(list.map((tool) => [tool.name, tool.input_schema])),
    (error) => {
      tools = undefined;
      throw error;
    },
  );
  return tools;
}

/** The property's own schema, past a nullable `anyOf` wrapper. */
function plain(schema) {
  const options = schema.anyOf || schema.oneOf;
  if (!options) return schema;
  return options.find((option) => option.type !== 'null') || schema;
}

/** One field for a property: its element, and how to read its value back (undefined: leave it out). */
function field(name, rawSchema, value, required) {
  const schema = plain(rawSchema);
  const id = `field-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const label = h('label', { for: id }, name, required ? ' *' : '');
  const hint = schema.description ? h('small', { class: 'muted' }, schema.description) : null;
  let input;
  let read;
  if (Array.isArray(schema.enum)) {
    input = h(
      'select',
      { id, name },
      required ? null : h('option', { value: '' }, '—'),
      schema.enum.map((option) => h('option', { value: String(option), selected: option === value }, String(option))),
    );
    read = () => (input.value === '' ? undefined : schema.enum.find((option) => String(option) === input.value));
  } else if (schema.type === 'boolean') {
    input = h('input', { id, name, type: 'checkbox', checked: value === true });
    read = () => input.checked;
  } else if (schema.type === 'integer' || schema.type === 'number') {
    input = h('input', {
      id,
      name,
      type: 'number',
      step: schema.type === 'integer' ? '1' : 'any',
      min: schema.minimum,
      max: schema.maximum,
      value: value ?? '',
    });
    read = () => (input.value === '' ? undefined : Number(input.value));
  } else if (schema.type === 'string') {
    const long = (schema.maxLength ?? 0) > 200 || String(value ?? '').length > 80;
    input = long
      ? h('textarea', { id, name, rows: 3, maxlength: schema.maxLength })
      : h('input', { id, name, type: 'text', maxlength: schema.maxLength, value: value ?? '' });
    if (long) input.value = value ?? '';
    read = () => (input.value === '' && !required ? undefined : input.value);
  } else {
    input = h('textarea', { id, name, rows: 3, class: 'json' });
    input.value = value === undefined ? '' : JSON.stringify(value, null, 2);
    read = () => {
      if (input.value.trim() === '') return undefined;
      try {
        return JSON.parse(input.value);
      } catch {
        throw new Error(`${name}: not valid JSON`);
      }
    };
  }
  return { element: h('div', { class: 'field', 'data-field': name }, label, input, hint), read };
}

/**
 * A form for `schema` (an object schema) filled with `value`; `read()` answers the edited input, or
 * throws with what is wrong before anything is sent. A schema without properties is edited as JSON.
 */
export function schemaForm(schema, value) {
  const properties = schema && schema.type === 'object' && schema.properties ? schema.properties : null;
  if (!properties) {
    const whole = field('input', {}, value, true);
    return { element: h('div', { class: 'schema-form' }, whole.element), read: () => whole.read() ?? {} };
  }
  const required = new Set(schema.required || []);
  const fields = Object.entries(properties).map(([name, property]) => ({
    name,
    ...field(name, property, value?.[name], required.has(name)),
  }));
  return {
    element: h(
      'div',
      { class: 'schema-form' },
      fields.map((item) => item.element),
    ),
    read() {
      const input = {};
      for (const item of fields) {
        const read = item.read();
        if (read !== undefined) input[item.name] = read;
      }
      return input;
    },
  };
}
