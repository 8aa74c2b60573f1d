// The check's report, drawn from report.json: the verdicts, then each
// violated property's counterexample as `steadfast check` prints it (the
// changes each step makes, a lasso's cycle marked as the part that repeats
// forever, the fairness classes it takes or finds disabled, the step where
// the violation begins), each state openable in stateright's Explorer.
//
// Everything from the report is put in the page as text, never as markup.
"use strict";

// How often the page asks again while the check runs.
const POLL_MS = 500;

// Verdicts as `steadfast check` prints them.
const VERDICTS = { violated: "VIOLATED", "not-checked": "not checked" };

function element(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child);
  }
  return node;
}

function setStatus(text) {
  document.getElementById("status").textContent = text;
}

// "step 4", "steps 4, 6", "steps 4 to 7, 9", as the command prints them.
function stepList(steps) {
  const runs = [];
  for (const step of steps) {
    const last = runs[runs.length - 1];
    if (last && last[1] + 1 === step) {
      last[1] = step;
    } else {
      runs.push([step, step]);
    }
  }
  const words = runs.map(([first, last]) =>
    last === first ? `${first}` : last === first + 1 ? `${first}, ${last}` : `${first} to ${last}`);
  return `${steps.length === 1 ? "step" : "steps"} ${words.join(", ")}`;
}

// The Explorer's link to the state of step `index`, or null where the
// Explorer's path stops (it has no stutter step).
function explorerLink(evidence, index) {
  const ordinals = evidence.explorer_path.replace(/^#\/steps\//, "").split("/");
  if (index >= ordinals.length) {
    return null;
  }
  return `/#/steps/${ordinals.slice(0, index + 1).join("/")}`;
}

function change(item) {
  const field = item.field === "" ? "state" : item.field;
  const line = item.before === null
    ? element("li", {}, element("code", {}, field), " = ", element("code", {}, item.after))
    : element("li", {}, element("code", {}, field), ": ", element("code", { class: "before" }, item.before),
      " → ", element("code", { class: "after" }, item.after));
  if (item.ghost) {
    line.classList.add("ghost");
  }
  return line;
}

function step(evidence, index) {
  const data = evidence.steps[index];
  const classes = ["step"];
  const marks = [];
  if (evidence.cycle_start !== null && index > evidence.cycle_start) {
    classes.push("cycle");
  }
  if (evidence.cycle_start === index) {
    classes.push("cycle-start");
    marks.push(element("span", { class: "mark cycle-mark" }, "the cycle starts here"));
  }
  if (evidence.trigger === index) {
    classes.push("trigger");
    const words = evidence.trigger === evidence.cycle_start
      ? "the violation begins here" : "the trigger holds here, and no response follows";
    marks.push(element("span", { class: "mark trigger-mark" }, words));
  }
  const action = data.action === null ? "initial state" : data.action;
  const head = element("div", { class: "head" },
    element("span", { class: "number" }, `step ${index}`), " ",
    element("span", { class: "action" }, action), ...marks);
  const link = explorerLink(evidence, index);
  if (link !== null) {
    head.append(" ", element("a", { class: "explorer", href: link }, "open in the Explorer"));
  }
  const changes = element("ul", { class: "changes" }, ...data.changes.map(change));
  if (data.changes.length === 0 && index > 0) {
    changes.append(element("li", { class: "nothing" }, "(nothing changes)"));
  }
  const whole = element("details", { class: "whole" }, element("summary", {}, "the whole state"),
    element("ul", {}, ...data.state.map(change)));
  return element("li", { class: classes.join(" "), "data-step": `${index}` }, head, changes, whole);
}

function fairness(evidence) {
  const rows = evidence.fairness.map((item) => element("tr", {},
    element("td", {}, item.class),
    element("td", {}, item.strength),
    element("td", {}, item.taken.length ? stepList(item.taken) : "—"),
    element("td", {}, item.disabled.length ? stepList(item.disabled) : "—")));
  return element("table", { class: "fairness" },
    element("caption", {}, "Why the cycle is a fair behaviour: each class is taken in it, or disabled in it " +
      "(a strong one at every step). “Disabled at step k”: in the state step k leads to."),
    element("thead", {}, element("tr", {}, element("th", {}, "Class"), element("th", {}, "Fairness"),
      element("th", {}, "Taken at"), element("th", {}, "Disabled at"))),
    element("tbody", {}, ...rows));
}

function evidenceSection(property, index) {
  const evidence = property.evidence;
  const title = `${evidence.counterexample ? "Counterexample to" : "Example of"} “${property.name}” (${property.kind})`;
  const steps = element("ol", { class: "steps", start: "0" });
  evidence.steps.forEach((_, i) => steps.append(step(evidence, i)));
  const section = element("section", { id: `property-${index}`, class: "evidence" },
    element("h2", {}, title),
    element("p", { class: "headline" }, evidence.headline), steps);
  if (evidence.cycle_start !== null) {
    const last = evidence.steps.length - 1;
    const turn = last > evidence.cycle_start
      ? `the steps ${evidence.cycle_start + 1} to ${last}` : `step ${last}`;
    steps.append(element("li", { class: "loop" },
      `↻ back to the state of step ${evidence.cycle_start}: ${turn} repeat forever`));
    if (evidence.fairness.length) {
      section.append(fairness(evidence));
    }
  }
  return section;
}

// The report last fetched, drawn again when the anchor changes.
let shown = null;

// The property the page's anchor names (`#property-K`), if it has evidence:
// the page then shows its evidence alone.
function focused(report) {
  const match = /^#property-(\d+)$/.exec(location.hash);
  const index = match ? Number(match[1]) : -1;
  const property = report.properties[index];
  return property && property.evidence !== null ? index : null;
}

function show(answer) {
  shown = answer;
  const report = answer.report;
  const stats = report.stats;
  const seconds = (stats.explore_time + stats.liveness_time).toFixed(2);
  let status = `${stats.unique_states} states, ${stats.edges} edges, depth ${stats.depth}; checked in ${seconds} s.`;
  if (report.stopped !== null) {
    status += ` INCOMPLETE: stopped by a bound (${report.stopped.bound}); “unknown” verdicts are not proofs, violations found are real.`;
  }
  setStatus(status);
  const focus = focused(report);
  const body = document.querySelector("#verdicts tbody");
  const sections = document.getElementById("evidence");
  body.replaceChildren();
  sections.replaceChildren();
  if (focus !== null) {
    sections.append(element("p", { class: "focus" }, "This counterexample alone is shown; ",
      element("a", { href: "#" }, "show every one"), "."));
  }
  report.properties.forEach((property, index) => {
    const drawn = property.verdict === "violated" && property.evidence !== null;
    const name = drawn
      ? element("a", { href: `#property-${index}` }, property.name) : property.name;
    body.append(element("tr", { "data-property": property.name, "data-verdict": property.verdict },
      element("td", {}, name), element("td", {}, property.kind),
      element("td", { class: "verdict" }, VERDICTS[property.verdict] || property.verdict)));
    if (drawn && (focus === null || focus === index)) {
      sections.append(evidenceSection(property, index));
    }
  });
  document.getElementById("verdicts").hidden = false;
}

async function load() {
  let answer;
  try {
    const response = await fetch("report.json", { cache: "no-store" });
    answer = await response.json();
  } catch (error) {
    setStatus(`The report could not be fetched (${error}); trying again.`);
    setTimeout(load, 4 * POLL_MS);
    return;
  }
  document.title = `steadfast: ${answer.model} (${answer.variant}, ${answer.scenario})`;
  document.getElementById("title").textContent =
    `${answer.model} (variant ${answer.variant}, scenario ${answer.scenario})`;
  if (answer.status === "checking") {
    setStatus(`Checking: ${answer.states} states so far, depth ${answer.depth}…`);
    setTimeout(load, POLL_MS);
  } else if (answer.status === "failed") {
    setStatus(`The check could not run: ${answer.error}`);
  } else {
    show(answer);
  }
}

window.addEventListener("hashchange", () => {
  if (shown !== null) {
    show(shown);
  }
});
document.getElementById("ghost").addEventListener("change", (event) => {
  document.body.classList.toggle("show-ghost", event.target.checked);
});
load();
