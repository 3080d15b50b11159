// The Design form's component editor, drawn and edited in the page (ui/design/editor.py says
// why). Gradio runs this once the component is on the page, with `element` (its root),
// `props` (`value`: the form's values by input key; `schema`: the registry as the page draws
// it), `server` (`check_design`: the messages for each input) and `watch` in scope.
// User text goes into the page as text (textContent, .value), never as HTML.
const schema = props.schema;
const byName = new Map(schema.components.map((c, i) => [c.name, { ...c, order: i }]));
const root = element.querySelector(".rs-editor") || element;
const GENERAL = "";
let values = { ...(props.value || {}) };
let asked = 0; // the newest check asked for: older answers are not drawn
let timer = null;

const elemKey = (key) => key.replace(/[#._:]/g, "-"); // as editor.py's elem_key

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (name === "text") node.textContent = String(v);
    else if (name === "class") node.className = v;
    else node.setAttribute(name, v === true ? "" : String(v));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

// --- slots: one component instance each ("rule", "rule#2"), as spec_form.Slot -------------
function slotOf(key) {
  const [name, number] = key.split("#");
  const info = byName.get(name);
  return info ? { key, name, instance: number ? Number(number) : 1, info } : null;
}
function slots() {
  return Object.keys(values)
    .filter((k) => k.endsWith(".enabled"))
    .map((k) => slotOf(k.slice(0, -".enabled".length)))
    .filter(Boolean)
    .sort((a, b) => a.info.order - b.info.order || a.instance - b.instance);
}
const slotLabel = (s) => (s.instance === 1 ? s.name : `${s.name} #${s.instance}`);
const defaultMetric = (s) => (s.instance === 1 ? s.name : `${s.name}_${s.instance}`);
function title(s) {
  const metric = String(values[`${s.key}.label`] ?? "").trim() || defaultMetric(s);
  return metric === s.name ? s.name : `${s.name} · ${metric}`;
}

// --- inputs -------------------------------------------------------------------------------
function errorLine(key) {
  return el("div", { class: "rs-error field-error", id: `error-${elemKey(key)}`, "data-key": key, hidden: true });
}
function read(input, kind) {
  if (kind === "check") return input.checked;
  if (kind === "number") {
    const text = input.value.trim();
    return text === "" ? null : Number(text);
  }
  return input.value;
}
function control(key, kind, spec = {}) {
  const value = values[key];
  let input;
  if (kind === "check") {
    input = el("input", { type: "checkbox" });
    input.checked = Boolean(value);
  } else if (kind === "choice") {
    input = el("select");
    const choices = [...spec.choices];
    if (value !== null && value !== undefined && !choices.includes(value)) choices.push(value);
    for (const c of choices) input.append(el("option", { value: c, text: c }));
    input.value = value ?? "";
  } else if (kind === "area") {
    input = el("textarea", { rows: spec.rows || 3, spellcheck: "false" });
    input.value = value ?? "";
  } else {
    input = el("input", kind === "number" ? { type: "number", step: "any" } : { type: "text" });
    if (spec.placeholder) input.placeholder = spec.placeholder;
    input.value = value ?? "";
  }
  input.addEventListener("input", () => edit(key, read(input, kind)));
  return input;
}
function field(key, label, kind, spec = {}) {
  const input = control(key, kind, spec);
  const caption = el("span", { class: "rs-label", text: label });
  const labelled = kind === "check" ? el("label", {}, input, caption) : el("label", {}, caption, input);
  return el(
    "div",
    { class: `rs-field rs-${kind}`, id: elemKey(key) },
    labelled,
    spec.info ? el("div", { class: "rs-info", text: spec.info }) : null,
    errorLine(key),
  );
}

// --- sections -------------------------------------------------------------------------------
function section(s) {
  const at = `${s.key}.`;
  const block = elemKey(s.key);
  const enabled = Boolean(values[at + "enabled"]);
  const node = el("details", { class: "rs-slot", id: `slot-${block}`, "data-slot": s.key, open: enabled });
  const remove = el("button", { type: "button", class: "rs-remove", id: `remove-${block}`, text: "Remove" });
  remove.addEventListener("click", () => removeSlot(s, node));
  node.append(
    el("summary", {}, el("span", { class: "rs-title", text: title(s) }), el("span", { class: "rs-badge", text: enabled ? props.on_badge : "" })),
    el("div", { class: "rs-head" }, el("div", { class: "rs-description", text: s.info.description }), remove),
    errorLine(s.key),
    el(
      "div",
      { class: "rs-grid rs-fields" },
      field(at + "enabled", `use ${title(s)}`, "check"),
      field(at + "weight", "weight", "number"),
      field(at + "label", "metric name in charts", "text", { placeholder: `default: ${defaultMetric(s)}` }),
    ),
    el(
      "div",
      { class: "rs-grid rs-schedule" },
      field(at + "schedule:kind", "weight schedule", "choice", { choices: schema.kinds, info: "how the weight moves over training steps" }),
      field(at + "schedule:end", "to weight", "number", { info: "the weight it reaches" }),
      field(at + "schedule:start_step", "from step", "number"),
      field(at + "schedule:end_step", "until step (linear, cosine)", "number"),
    ),
    el("div", { class: "rs-grid" }, ...s.info.params.map((p) => field(at + p.name, p.label, p.widget, p))),
    el("div", { class: "rs-source", text: `Source: ${s.info.source}` }),
  );
  return node;
}
function retitle(s) {
  const node = root.querySelector(`#slot-${elemKey(s.key)}`);
  if (!node) return;
  const enabled = Boolean(values[`${s.key}.enabled`]);
  node.querySelector(".rs-title").textContent = title(s);
  node.querySelector(".rs-badge").textContent = enabled ? props.on_badge : "";
  node.querySelector(`#${elemKey(s.key)}-enabled .rs-label`).textContent = `use ${title(s)}`;
}

// --- the whole editor -------------------------------------------------------------------------
const sections = el("div", { class: "rs-sections" });
const picker = el("select", { id: "add-component-name", "aria-label": "component to add" });
const addButton = el("button", { type: "button", id: "add-component", text: "Add component" });
const message = el("div", { class: "rs-message", id: "design-editor-message", role: "status" });
addButton.addEventListener("click", () => addSlot(picker.value));

function pickerOptions() {
  const chosen = picker.value;
  const shown = slots();
  picker.replaceChildren(el("option", { value: "", text: "pick a component", disabled: true }));
  for (const c of schema.components) {
    const held = shown.filter((s) => s.name === c.name).length;
    const full = held >= c.most;
    const note = !full ? "" : c.most === 1 ? " (in the form: a spec holds one)" : ` (the form holds at most ${c.most})`;
    picker.append(el("option", { value: c.name, text: c.name + note, disabled: full }));
  }
  picker.value = chosen;
}
function drawAll() {
  sections.replaceChildren(...slots().map(section));
  root.replaceChildren(
    errorLine(GENERAL),
    el(
      "div",
      { class: "rs-grid rs-spec" },
      field("description", "Description", "area", { rows: 2, placeholder: "optional: what this reward is for" }),
      field("aggregation", "Aggregation (GRPO's multi_objective_aggregation)", "choice", {
        choices: schema.aggregations,
        info: "sum then normalise per group (default), or normalise each component, then sum",
      }),
    ),
    sections,
    el("div", { class: "rs-add" }, el("label", { class: "rs-label", for: "add-component-name", text: "Add component" }), picker, addButton),
    message,
  );
  pickerOptions();
}

// --- edits --------------------------------------------------------------------------------------
function commit() {
  props.value = { ...values }; // a new object: Gradio sends it to the server's change event
  clearTimeout(timer);
  timer = setTimeout(askNotes, 150);
}
function edit(key, value) {
  values[key] = value;
  if (key.endsWith(".enabled") || key.endsWith(".label")) {
    const s = slotOf(key.slice(0, key.lastIndexOf(".")));
    if (s) retitle(s);
  }
  commit();
}
function say(text) {
  message.textContent = text;
}
function addSlot(name) {
  const info = byName.get(name);
  if (!info) return say("▲ Not added: pick a component to add.");
  const taken = new Set(slots().filter((s) => s.name === name).map((s) => s.instance));
  let instance = 1;
  while (taken.has(instance) && instance <= info.most) instance += 1;
  if (instance > info.most) {
    const why = info.most === 1 ? `${name} is in the form already; a spec holds one ${name}` : `the form holds at most ${info.most} ${name} components`;
    return say(`▲ Not added: ${why}.`);
  }
  const s = slotOf(instance === 1 ? name : `${name}#${instance}`);
  for (const [f, v] of Object.entries(info.defaults)) values[`${s.key}.${f}`] = v;
  const next = slots().find((o) => o.info.order > s.info.order || (o.name === name && o.instance > instance));
  const before = next && sections.querySelector(`#slot-${elemKey(next.key)}`);
  const node = section(s);
  sections.insertBefore(node, before || null);
  // The new block lands where the registry orders it, often out of view or at its edge: show
  // it from its title.
  node.scrollIntoView({ block: "start" });
  pickerOptions();
  say(`Added ${slotLabel(s)}.`);
  commit();
}
function removeSlot(s, node) {
  if (!(`${s.key}.enabled` in values)) return; // a second click on a removed section
  for (const k of Object.keys(values)) if (k.startsWith(`${s.key}.`)) delete values[k];
  node.remove();
  pickerOptions();
  say(`Removed ${slotLabel(s)} from the reward.`);
  commit();
}

// --- messages from the server ---------------------------------------------------------------------
function showNotes(notes) {
  const errors = notes.errors || {};
  const warnings = notes.warnings || {};
  const lines = new Map([...root.querySelectorAll(".rs-error")].map((n) => [n.dataset.key, n]));
  const unplaced = [];
  for (const [key, text] of Object.entries({ ...warnings, ...errors })) {
    if (!lines.has(key)) unplaced.push(`${key}: ${text}`);
  }
  for (const [key, line] of lines) {
    let text = errors[key] ?? warnings[key] ?? "";
    if (key === GENERAL && unplaced.length) text = [text, ...unplaced].filter(Boolean).join("; ");
    line.textContent = text ? `▲ ${text}` : "";
    line.hidden = !text;
  }
}
async function askNotes() {
  const mine = ++asked;
  let notes;
  try {
    notes = await server.check_design({ ...values });
  } catch (err) {
    notes = { errors: { [GENERAL]: "the server did not answer the check; edit again to retry" } };
  }
  if (mine === asked && notes) showNotes(notes);
}

// A value set by the server (a preset, an import, a reload's design) is drawn whole.
watch("value", () => {
  values = { ...(props.value || {}) };
  drawAll();
  clearTimeout(timer);
  askNotes();
});
drawAll();
askNotes();
