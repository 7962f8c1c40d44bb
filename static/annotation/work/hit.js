/* HITs: the questions of one HIT one at a time (answers by tap, click or key), submission, the next
 * HIT without a reload, the lease heartbeat, and the keyboard. Answers survive a reload of the page
 * (sessionStorage; the API hands back the same HIT while its lease runs). */
import { api, errorText, handleAuth } from "./api.js";
import {
  $, announce, blocked, cfg, clear, clearError, currentStage, el, now, onLeaveTask, prolificFinish, showError,
  showStage, sideCue, sideDescription, sideOf,
} from "./dom.js";
import { examplesOf, guideAtHitStart, guideFor, guideOpen, guideShowExamples, guideToggle } from "./guide.js";

let hit = null;        // {id, expires_at, questions: [...]}
let index = 0;         // question shown
let answers = [];      // per question: {choice, time_ms}
let shownAt = null;    // when the current question was put on screen
let spent = [];        // ms already spent on each question on earlier visits
let busy = false;
let heartbeatTimer = null;
let waitTimer = null;  // a 204 with Retry-After: ask again after that many seconds

/* Nothing for now, more may come: say so, count down, and ask again (not the end of the task). */
function waitAndRetry(seconds) {
  showStage("stage-wait");
  announce("No questions for you right now; checking again in " + seconds + " seconds.");
  let left = seconds;
  const tick = function () { $("wait-seconds").textContent = "in " + left + " s"; };
  tick();
  clearInterval(waitTimer);
  waitTimer = setInterval(function () {
    left -= 1;
    if (left > 0) { tick(); return; }
    clearInterval(waitTimer);
    waitTimer = null;
    nextHit();
  }, 1000);
}

/* MTurk: our API has the answers; now tell MTurk (form action built by the server). */
function mturkSubmit(hitId, count) {
  $("mturk-submit-hit").value = String(hitId);
  $("mturk-submit-answers").value = String(count);
  showStage("stage-mturk-submit");
  announce("Your answers were saved. Submitting the HIT to MTurk…");
  $("mturk-submit-form").submit();
}

export function nextHit() {
  clearError();
  busy = true;
  announce("Loading the next set of questions…");
  const request = cfg.mode === "mturk" ?
    api("POST", "mturk/" + cfg.campaign + "/assignment/", { assignmentId: cfg.mturkAssignmentId, hitId: cfg.mturkHitId }) :
    api("POST", "campaigns/" + cfg.campaign + "/assignments/", {});
  return request.then(takeNext);
}

/* The answer to a HIT request (or a submit's "next", the same answer as a value): a HIT, nothing for
   now (wait and ask again), nothing left, or an error. */
function takeNext(res) {
  busy = false;
  if (handleAuth(res)) { return; }
  if (res.status === 204) {
    hit = null;
    if (res.retryAfter) { return waitAndRetry(res.retryAfter); }
    if (cfg.mode === "prolific") { return prolificFinish(); }
    showStage(cfg.mode === "mturk" ? "stage-mturk-nowork" : "stage-done");
    announce("No work left.");
    return;
  }
  if (cfg.mode === "mturk" && res.data && res.data.status === "submitted") {
    return mturkSubmit(res.data.id, ""); // submitted before a reload: only MTurk is left to tell
  }
  if (res.status >= 300 || !res.data) { return blocked(errorText(res)); } // e.g. paused campaign (409), paused annotator (403)
  beginHit(res.data);
}

function beginHit(data) {
  if (!data.questions || !data.questions.length) { hit = null; showStage("stage-done"); return; }
  hit = data;
  answers = hit.questions.map(function () { return null; });
  spent = hit.questions.map(function () { return 0; });
  index = 0;
  restoreAnswers();
  const resume = firstUnanswered();
  $("submit-hint").textContent = "";
  guideFor(hit.questions);
  guideAtHitStart(resume <= 0); // open for the first HIT; I or ? opens it later
  hit.questions.forEach(function (q) { const img = new Image(); img.src = q.image_url; }); // preload
  showStage("stage-task", $("progress"));
  showQuestion(resume === -1 ? hit.questions.length - 1 : resume);
  startHeartbeat();
}

function storageKey() { return "t2i-hit-" + hit.id; }
function saveAnswers() {
  try { window.sessionStorage.setItem(storageKey(), JSON.stringify({ answers: answers, spent: spent })); } catch (e) { /* private mode */ }
}
function forgetAnswers() {
  try { window.sessionStorage.removeItem(storageKey()); } catch (e) { /* private mode */ }
}
function restoreAnswers() {
  let saved = null;
  try { saved = JSON.parse(window.sessionStorage.getItem(storageKey()) || "null"); } catch (e) { saved = null; }
  if (!saved || !Array.isArray(saved.answers) || saved.answers.length !== hit.questions.length) { return; }
  saved.answers.forEach(function (a, k) {
    if (a && hit.questions[k].choices.indexOf(a.choice) !== -1) { answers[k] = a; spent[k] = saved.spent[k] || 0; }
  });
}

function shortcutKeys(choices) {
  const firsts = choices.map(function (c) { return String(c).charAt(0).toUpperCase(); });
  const unique = firsts.every(function (f, i) { return /[A-Z]/.test(f) && f !== "I" && firsts.indexOf(f) === i; });
  return choices.map(function (c, i) { return unique ? firsts[i] : String(i + 1); });
}

/* The image scaled, up or down, to the space the frame leaves (a 256 px image fills a phone's width),
   keeping its proportions: its width and height attributes (never a style attribute: the CSP) are set
   from the frame's size, again whenever the frame is resized. work.css caps them at the frame. */
function fitImage() {
  const img = $("q-image");
  const frame = $("frame");
  if (!document.body.classList.contains("task-mode") || !img.naturalWidth || !img.naturalHeight) { return; }
  const w = frame.clientWidth;
  const h = frame.clientHeight;
  if (!w || !h) { return; }
  const ratio = img.naturalWidth / img.naturalHeight;
  const width = Math.max(1, Math.floor(Math.min(w, h * ratio)));
  img.setAttribute("width", String(width));
  img.setAttribute("height", String(Math.max(1, Math.floor(width / ratio))));
}

function showQuestion(i) {
  const q = hit.questions[i];
  index = i;
  const total = hit.questions.length;
  $("progress").textContent = "Question " + (i + 1) + " / " + total;
  const bar = $("progress-bar");
  bar.max = total;
  bar.value = answers.filter(Boolean).length;
  $("q-text").textContent = q.text || "";
  const examplesButton = $("q-examples");
  const ownExamples = q.family ? examplesOf(q.family) : 0;
  examplesButton.hidden = ownExamples === 0;
  examplesButton.textContent = ownExamples === 1 ? "See an example" : "See " + ownExamples + " examples";
  examplesButton.dataset.family = q.family || "";

  const side = sideOf(q);
  const frame = $("frame");
  frame.setAttribute("data-side", side || "none");
  const oldCue = frame.querySelector(".side-cue");
  oldCue.parentNode.replaceChild(sideCue(side), oldCue);
  $("side-text").textContent = sideDescription(side);
  $("side-text").hidden = !side;

  const img = $("q-image");
  img.alt = "Image " + (i + 1) + " of " + total + ". " + sideDescription(side);
  img.onerror = function () {
    if (index === i) { showError("The image could not be loaded. Answer \u201CCannot identify\u201D if you cannot see it, or reload the page."); }
  };
  img.onload = fitImage;
  if (img.getAttribute("src") !== q.image_url) { img.src = q.image_url; } else if (img.complete) { fitImage(); }
  shownAt = now(); // the HIT's images were preloaded when it began

  const keys = shortcutKeys(q.choices || []);
  const group = $("choices");
  clear(group);
  const chosen = answers[i] && answers[i].choice;
  (q.choices || []).forEach(function (choice, j) {
    const b = el("button", {
      type: "button", role: "radio", "class": "choice",
      "aria-checked": choice === chosen ? "true" : "false",
      tabindex: (chosen ? choice === chosen : j === 0) ? "0" : "-1",
      "data-choice": choice, "data-key": keys[j],
      "aria-keyshortcuts": keys[j],
    });
    b.appendChild(el("kbd", null, keys[j]));
    b.appendChild(el("span", null, choice));
    b.addEventListener("click", function () { choose(j); });
    group.appendChild(b);
  });

  const hints = (q.choices || []).map(function (c, j) { return keys[j] + " = " + c; });
  $("key-hints").textContent = "Keys: " + hints.join(", ") + ". Enter = " + (i === total - 1 ? "submit" : "next") +
    ", Backspace = back, I = instructions and examples.";
  $("back").disabled = i === 0;
  updateNext();
  $("q-text").focus({ preventScroll: true });
}

function updateNext() {
  const last = index === hit.questions.length - 1;
  const next = $("next");
  next.querySelector(".label").textContent = last ? "Submit" : "Next";
  next.classList.toggle("primary", last && allAnswered());
  next.disabled = busy || !answers[index];
}
function allAnswered() { return answers.every(Boolean); }

function elapsed() {
  const base = spent[index] || 0;
  return Math.max(0, Math.round(base + (shownAt === null ? 0 : now() - shownAt)));
}
function leaveQuestion() {
  if (shownAt !== null) { spent[index] = (spent[index] || 0) + (now() - shownAt); }
  shownAt = null;
}

function choose(j) {
  if (busy || !hit) { return; }
  const q = hit.questions[index];
  const choice = q.choices[j];
  // time_ms: from the question being shown (image on screen) to this answer, summed over visits.
  answers[index] = { choice: choice, time_ms: elapsed() };
  const buttons = $("choices").querySelectorAll("button.choice");
  Array.prototype.forEach.call(buttons, function (b, k) {
    b.setAttribute("aria-checked", k === j ? "true" : "false");
    b.tabIndex = k === j ? 0 : -1;
  });
  saveAnswers();
  $("progress-bar").value = answers.filter(Boolean).length;
  guideOpen(false); // read at the start of the HIT; out of the way once answering
  $("saved-note").textContent = "";
  announce("Answered " + choice + ".");
  if (index !== hit.questions.length - 1) {
    go(index + 1);
  } else {
    updateNext();
    const missing = firstUnanswered();
    $("submit-hint").textContent = missing === -1 ? "All questions answered. Press Enter or the Submit button to send your answers." :
      "Question " + (missing + 1) + " has no answer yet.";
    $("next").focus({ preventScroll: true });
  }
}

function firstUnanswered() {
  for (let k = 0; k < answers.length; k++) { if (!answers[k]) { return k; } }
  return -1;
}

function go(i) {
  if (!hit || i < 0 || i >= hit.questions.length) { return; }
  leaveQuestion();
  clearError();
  $("submit-hint").textContent = "";
  showQuestion(i);
}

function forward() {
  if (!hit || busy) { return; }
  if (!answers[index]) {
    announce("Choose an answer first.");
    showError("Choose an answer first (use the buttons or the keys shown on them).");
    return;
  }
  clearError();
  if (index < hit.questions.length - 1) { go(index + 1); return; }
  const missing = firstUnanswered();
  if (missing !== -1) { go(missing); showError("Question " + (missing + 1) + " has no answer yet."); return; }
  submitHit();
}

function submitHit() {
  busy = true;
  leaveQuestion();
  updateNext();
  announce("Sending your answers…");
  // Outside MTurk and Prolific the next HIT comes back with the submit's answer: one round trip.
  const chained = cfg.mode !== "mturk" && cfg.mode !== "prolific";
  const body = {
    answers: hit.questions.map(function (q, k) {
      return { question: q.id, choice: answers[k].choice, time_ms: answers[k].time_ms };
    }),
  };
  if (chained) { body.next = true; }
  api("POST", "assignments/" + hit.id + "/submit/", body).then(function (res) {
    busy = false;
    if (handleAuth(res)) { return; }
    if (res.status === 409) { return leaseExpired(res); }
    if (res.status >= 300) {
      showError(errorText(res));
      updateNext();
      shownAt = now();
      return;
    }
    stopHeartbeat();
    forgetAnswers();
    if (cfg.mode === "mturk") { return mturkSubmit(hit.id, body.answers.length); }
    if (cfg.mode === "prolific") { announce("Thank you, your answers were saved."); return prolificFinish(); }
    announce("Thank you, your answers were saved. Loading the next set…");
    $("saved-note").textContent = "Your last set of answers was saved.";
    const next = res.data && res.data.next;
    if (!next) { nextHit(); return; }
    clearError();
    // {status, hit, retry_after, detail, errors}: what POST .../assignments/ would have answered.
    takeNext({ status: next.status, data: next.hit || (next.status >= 300 ? next : null),
               retryAfter: next.retry_after || 0 });
  });
}

function leaseExpired(res) {
  stopHeartbeat();
  if (hit) { forgetAnswers(); }
  hit = null;
  // The API says why (lease ran out and was re-assigned, HIT returned, ...); the template has a default.
  const detail = res && res.data && res.data.detail;
  if (detail) { $("expired-detail").textContent = detail; }
  showStage("stage-expired");
  announce("This set of questions expired.");
}

/* ---------- heartbeat: keep the lease while the page is open ---------- */

function heartbeatDelay() {
  const expires = hit && hit.expires_at ? new Date(hit.expires_at).getTime() - Date.now() : 0;
  // A third of the remaining lease, between 10 s and 60 s: several chances before it runs out.
  return Math.max(10000, Math.min(60000, expires > 0 ? expires / 3 : 60000));
}
function startHeartbeat() {
  stopHeartbeat();
  heartbeatTimer = window.setTimeout(beat, heartbeatDelay());
}
function stopHeartbeat() {
  if (heartbeatTimer) { window.clearTimeout(heartbeatTimer); heartbeatTimer = null; }
}
function beat() {
  if (!hit || currentStage() !== "stage-task") { return; }
  const id = hit.id;
  api("POST", "assignments/" + id + "/heartbeat/", {}).then(function (res) {
    if (!hit || hit.id !== id) { return; }
    if (res.status === 409 || res.status === 410) { return leaseExpired(res); }
    if (res.status === 200 && res.data && res.data.expires_at) { hit.expires_at = res.data.expires_at; }
    startHeartbeat();
  });
}

/* ---------- controls and keyboard ---------- */

function onKey(ev) {
  if (currentStage() !== "stage-task" || !hit || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
  const t = ev.target;
  const tag = t && t.tagName;
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (t && t.isContentEditable)) { return; }
  // A focused button or summary handles Enter/Space itself (native activation).
  if ((tag === "BUTTON" || tag === "SUMMARY" || tag === "A") && (ev.key === "Enter" || ev.key === " ")) { return; }
  if (ev.key === "Enter") { ev.preventDefault(); forward(); return; }
  if (ev.key === "Backspace" || ev.key === "ArrowLeft") { ev.preventDefault(); go(index - 1); return; }
  if (ev.key === "ArrowRight") { ev.preventDefault(); if (answers[index]) { forward(); } return; }
  if (ev.key === "Escape" && $("instructions").open) { ev.preventDefault(); guideOpen(false); $("q-text").focus({ preventScroll: true }); return; }
  if (ev.key === "i" || ev.key === "I" || ev.key === "?") { ev.preventDefault(); guideToggle(); return; }
  if (ev.key.length !== 1) { return; }
  const key = ev.key.toUpperCase();
  const buttons = $("choices").querySelectorAll("button.choice");
  for (let k = 0; k < buttons.length; k++) {
    if (buttons[k].getAttribute("data-key") === key || String(k + 1) === key) {
      ev.preventDefault();
      choose(k);
      return;
    }
  }
}

export function initHits(callbacks) {
  onLeaveTask(stopHeartbeat);
  $("next").addEventListener("click", forward);
  $("back").addEventListener("click", function () { go(index - 1); });
  if (window.ResizeObserver) { new ResizeObserver(fitImage).observe($("frame")); }
  window.addEventListener("resize", fitImage);
  $("q-examples").addEventListener("click", function () { guideShowExamples($("q-examples").dataset.family); });
  $("new-hit").addEventListener("click", function () { nextHit(); });
  $("check-again").addEventListener("click", function () { callbacks.start(); });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && hit && currentStage() === "stage-task") { stopHeartbeat(); beat(); }
  });
  // Arrow keys move the focus between the choices (roving tabindex); Space/Enter picks one.
  $("choices").addEventListener("keydown", function (ev) {
    const keys = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
    if (!(ev.key in keys)) { return; }
    const buttons = Array.prototype.slice.call($("choices").querySelectorAll("button.choice"));
    const at = buttons.indexOf(document.activeElement);
    if (at === -1) { return; }
    ev.preventDefault();
    ev.stopPropagation();
    const to = buttons[(at + keys[ev.key] + buttons.length) % buttons.length];
    buttons.forEach(function (b) { b.tabIndex = b === to ? 0 : -1; });
    to.focus();
  });
  document.addEventListener("keydown", onKey);
}
