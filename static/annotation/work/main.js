/* The annotator's work page: consent -> qualification tests -> HITs, driven by the public API.
 *
 * Plain ES modules, no build step and no inline code (Content-Security-Policy friendly):
 * configuration comes from the data- attributes of #work-app, every element exists in the
 * server-rendered template, and API data is written with textContent only (never innerHTML). Between
 * questions and HITs the page never reloads: the next HIT comes back with the submit's answer
 * (POST /api/assignments/{id}/submit/ with "next": true; one round trip), or, in the MTurk and Prolific
 * modes and at the start, from POST /api/campaigns/{id}/assignments/.
 *
 *   main.js           the flow: task info -> consent -> qualifications -> HITs
 *   dom.js            configuration, DOM helpers, messages, stages, the PST side cue
 *   api.js            fetch wrapper, error text, login redirect
 *   guide.js          instructions and examples (per example family), the I / ? key
 *   qualification.js  qualification tests
 *   hit.js            HITs, answers, heartbeat, keyboard
 *
 * Crowd-platform modes (data-mode, set by the crowd app's pages):
 *  - "mturk": the HIT comes from POST /api/mturk/{campaign}/assignment/ (tied to the accepted MTurk
 *    assignment), qualification attempts also grant the MTurk qualification, API calls carry the
 *    annotator's token (MTurk frames the page: third-party cookies may not be sent), and once our API
 *    stored the answers the server-built #mturk-submit-form is posted to MTurk's externalSubmit.
 *  - "prolific": after each HIT, on "no work left" and on a test failed for good the page goes to
 *    data-finish-url, where the server decides between more work and the completion / screen-out code.
 */
import { api, errorText, handleAuth } from "./api.js";
import { $, app, blocked, cfg, clearError, showError, showStage } from "./dom.js";
import { guideSet, initGuide } from "./guide.js";
import { initHits, nextHit } from "./hit.js";
import { initQualification, showQualification } from "./qualification.js";

function isConsented(t) {
  if (typeof t.consented === "boolean") { return t.consented; }
  return Boolean(t.consented_at);
}
function qualificationPassed(q) {
  if (typeof q.passed === "boolean") { return q.passed; }
  return q.status === "passed";
}
function pendingQualifications(t) {
  return (t.qualifications || []).filter(function (q) { return !qualificationPassed(q); });
}

function start() {
  clearError();
  return api("GET", "campaigns/" + cfg.campaign + "/task/").then(function (res) {
    if (handleAuth(res)) { return; }
    if (res.status !== 200) { return blocked(errorText(res)); }
    const task = res.data || {};
    guideSet(task);
    if (!isConsented(task)) { return showConsent(task); }
    if (task.enrollment_status && task.enrollment_status !== "active") {
      return blocked("Your participation in this task is " + task.enrollment_status +
        (task.status_reason ? ": " + task.status_reason : ".") + " Please contact the researchers if you think this is a mistake.");
    }
    const pending = pendingQualifications(task);
    if (pending.length) { return showQualification(pending[0]); }
    return nextHit();
  });
}

function showConsent(t) {
  $("consent-text").textContent = t.consent_text || t.consent || "";
  $("consent-check").checked = false;
  showStage("stage-consent");
}

function submitConsent(ev) {
  ev.preventDefault();
  clearError();
  if (!$("consent-check").checked) {
    showError("Please tick the box to confirm that you agree, or close this page if you do not.");
    $("consent-check").focus();
    return;
  }
  const button = $("consent-submit");
  button.disabled = true;
  api("POST", "campaigns/" + cfg.campaign + "/consent/", { consent: true }).then(function (res) {
    button.disabled = false;
    if (handleAuth(res)) { return; }
    if (res.status >= 300) { showError(errorText(res)); return; }
    start();
  });
}

if (app) {
  $("consent-form").addEventListener("submit", submitConsent);
  initGuide();
  initQualification({ start: start, nextHit: nextHit });
  initHits({ start: start });
  start();
}
