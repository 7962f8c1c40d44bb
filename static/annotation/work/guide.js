/* Instructions and examples (the <details id="instructions"> panel of the task stage).
 *
 * The task data (GET /api/campaigns/{id}/task/) has the campaign's instructions, the instructions per
 * example family (`family_instructions`: the PST paper's text per setting) and the example images
 * (`examples`: {family, image_url, answer, caption}). A HIT's questions name their family, so the
 * panel shows what applies to the HIT on screen. It is open at the start of the first HIT an annotator
 * sees in this campaign, collapsed afterwards (remembered in localStorage), and the I or ? key
 * opens and closes it at any time; Escape closes it. */
import { $, app, cfg, clear, el } from "./dom.js";

let task = {};

function seenKey() { return "t2i-guide-seen-" + cfg.campaign; }
function seen() { try { return window.localStorage.getItem(seenKey()) === "1"; } catch (e) { return false; } }
function markSeen() { try { window.localStorage.setItem(seenKey(), "1"); } catch (e) { /* private mode */ } }

function exampleFigure(ex, n) {
  const url = typeof ex === "string" ? ex : (ex.image_url || ex.url);
  if (!url) { return null; }
  const answer = typeof ex === "string" ? "" : (ex.answer || "");
  const caption = typeof ex === "string" ? "" : (ex.caption || "");
  const words = [answer ? "Correct answer: " + answer : "", caption].filter(Boolean).join(". ");
  const fig = el("figure", { "class": "example", "data-family": (ex && ex.family) || "" });
  fig.appendChild(el("img", { src: url, alt: words ? "Example " + n + ". " + words : "Example image " + n, loading: "lazy" }));
  if (answer || caption) {
    const cap = el("figcaption");
    if (answer) { cap.appendChild(el("strong", { "class": "example-answer" }, answer)); }
    if (caption) { cap.appendChild(el("span", { "class": "example-caption" }, caption)); }
    fig.appendChild(cap);
  }
  return fig;
}

/* The task data, once per page load. */
export function guideSet(t) {
  task = t || {};
  const name = task.name || task.campaign_name || (task.campaign && task.campaign.name) || "";
  if (name) { $("campaign-name").textContent = name; }
  $("instructions-text").textContent = task.instructions || "Answer each question about the image shown.";
  guideFor(null);
}

/* Show the family instructions and examples of the HIT's questions (all of them without a HIT). */
export function guideFor(questions) {
  const families = questions ? questions.map(function (q) { return q.family || ""; }) : null;
  const wanted = function (family) { return !families || !family || families.indexOf(family) !== -1; };
  const byFamily = task.family_instructions || {};
  const texts = $("family-instructions");
  clear(texts);
  Object.keys(byFamily).filter(function (f) { return families && families.indexOf(f) !== -1; }).forEach(function (f) {
    texts.appendChild(el("p", { "class": "instructions-text", "data-family": f }, byFamily[f]));
  });
  const box = $("examples");
  clear(box);
  let n = 0;
  (task.examples || task.example_images || []).forEach(function (ex) {
    if (typeof ex !== "string" && !wanted(ex.family)) { return; }
    const fig = exampleFigure(ex, n + 1);
    if (fig) { box.appendChild(fig); n += 1; }
  });
  $("examples-heading").hidden = n === 0;
}

/* How many examples the task has for one family (the question's own: its "Examples" button). */
export function examplesOf(family) {
  return (task.examples || []).filter(function (ex) { return typeof ex !== "string" && ex.family === family; }).length;
}

/* The question's own examples, one tap away: open the panel and bring the first example of the
   family into view (on a phone the panel is a drawer over the page, so the image keeps its size). */
export function guideShowExamples(family) {
  guideOpen(true);
  const first = document.querySelector('#examples figure[data-family="' + CSS.escape(family) + '"]');
  if (first) { first.scrollIntoView({ block: "nearest" }); first.classList.add("example-current"); }
  $("instructions").querySelector("summary").focus({ preventScroll: true });
}

/* The panel's state on #work-app too (work.css lays an open panel out beside the question on wide screens). */
function sync() { app.classList.toggle("guide-open", $("instructions").open); }

export function guideOpen(open) {
  $("instructions").open = open;
  if (!open) { markSeen(); }
  sync();
}

/* At the start of a HIT: open for an annotator's first HIT here (or a resumed HIT's first question). */
export function guideAtHitStart(resumeAtStart) {
  $("instructions").open = resumeAtStart && !seen();
  sync();
}

export function guideToggle() {
  const panel = $("instructions");
  panel.open = !panel.open;
  if (!panel.open) { markSeen(); }
  sync();
  if (panel.open) { panel.querySelector("summary").focus({ preventScroll: true }); }
}

export function initGuide() {
  const close = $("instructions-close");
  if (close) { close.addEventListener("click", function () { guideOpen(false); $("q-text").focus({ preventScroll: true }); }); }
  $("instructions").addEventListener("toggle", function () {
    sync();
    if (!$("instructions").open) { markSeen(); }
  });
}
