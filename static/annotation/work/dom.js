/* Shared helpers of the work page: configuration from #work-app's data- attributes, DOM building
 * (textContent only, never innerHTML; no style attributes: the page runs under a strict CSP),
 * messages, stages, and the side cue of PST questions. */

export const app = document.getElementById("work-app");

export const cfg = app ? {
  campaign: app.dataset.campaign,
  apiRoot: app.dataset.apiRoot || "/api/",
  csrf: app.dataset.csrf || "",
  loginUrl: app.dataset.loginUrl || "/",
  mode: app.dataset.mode || "",
  authToken: app.dataset.authToken || "",
  mturkAssignmentId: app.dataset.mturkAssignmentId || "",
  mturkHitId: app.dataset.mturkHitId || "",
  finishUrl: app.dataset.finishUrl || "",
} : {};

export function $(id) { return document.getElementById(id); }

export function el(tag, attrs, text) {
  const node = document.createElement(tag);
  if (attrs) { Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); }); }
  if (text !== undefined && text !== null) { node.textContent = text; }
  return node;
}

export function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }
export function now() { return (window.performance && performance.now) ? performance.now() : Date.now(); }
export function list(data) { return Array.isArray(data) ? data : (data && Array.isArray(data.results) ? data.results : []); }

/* ---------- messages ---------- */

export function showError(text) {
  const box = $("alert");
  box.textContent = text;
  box.hidden = false;
}
export function clearError() { const box = $("alert"); box.hidden = true; box.textContent = ""; }
export function announce(text) { $("status").textContent = text; }

/* ---------- stages: one <section id="stage-..."> is shown at a time ---------- */

const state = { stage: "stage-loading", onLeaveTask: null };

export function currentStage() { return state.stage; }
export function onLeaveTask(fn) { state.onLeaveTask = fn; }

export function showStage(id, focusTarget) {
  const stages = Array.prototype.map.call(app.querySelectorAll("section[id^='stage-']"), function (n) { return n.id; });
  stages.forEach(function (s) { const node = $(s); if (node) { node.hidden = (s !== id); } });
  state.stage = id;
  // The task stage fills the screen (work.css: body.task-mode): question, image and answers visible.
  document.body.classList.toggle("task-mode", id === "stage-task");
  if (id !== "stage-task" && state.onLeaveTask) { state.onLeaveTask(); }
  const target = focusTarget || $(id).querySelector("h1, h2");
  if (target) {
    if (!target.hasAttribute("tabindex")) { target.setAttribute("tabindex", "-1"); }
    target.focus({ preventScroll: id === "stage-task" });
  }
}

export function blocked(text) {
  $("blocked-text").textContent = text;
  showStage("stage-blocked");
}

/* Prolific: the server decides what comes next (more work, completion or screen-out code). */
export function prolificFinish() {
  showStage("stage-prolific-finish");
  window.location.href = cfg.finishUrl;
}

export function formatTime(iso) {
  const d = new Date(iso);
  if (isNaN(d.getTime())) { return iso; }
  return d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
}

/* ---------- PST: which person a question asks about ---------- */

/* The API's slot/position when it sends one, else the question text ("... on the left ...").
 * GEP questions have no side. */
export function sideOf(q) {
  const s = q.slot || q.position || q.side;
  if (s === "left" || s === "right") { return s; }
  const m = /\bon the (left|right)\b/i.exec(q.text || "");
  return m ? m[1].toLowerCase() : null;
}
export function sideDescription(side) {
  return side ? "The question is about the person on the " + side + " (outlined)." : "";
}
export function sideCue(side) {
  const cue = el("div", { "class": "side-cue", "aria-hidden": "true" });
  if (side) {
    cue.appendChild(el("div", { "class": "side-dim" }));
    cue.appendChild(el("div", { "class": "side-outline" }));
    cue.appendChild(el("span", { "class": "side-label" }, side === "left" ? "\u25C0 Left person" : "Right person \u25B6"));
  }
  return cue;
}
