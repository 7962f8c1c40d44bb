/* Qualification tests: the items of one test as a form, the attempt, and its result (passed, or
 * when it may be retaken). `flow.start()` runs again after a pass; `flow.nextHit()` when the test
 * is gone. */
import { api, errorText, handleAuth } from "./api.js";
import {
  $, announce, blocked, cfg, clear, clearError, el, formatTime, list, prolificFinish, showError, showStage,
  sideCue, sideDescription, sideOf,
} from "./dom.js";

let qual = null; // {id, name, items}
let flow = { start: function () {}, nextHit: function () {} };

export function showQualification(summary) {
  clearError();
  if (summary.attempts_left === 0) {
    if (cfg.mode === "prolific") { return prolificFinish(); }
    return blocked("You did not pass the qualification test \u201C" + (summary.name || "") +
      "\u201D and have no attempts left, so there is no work for you in this task. Thank you for your time.");
  }
  if (summary.retake_at && new Date(summary.retake_at).getTime() > Date.now()) {
    $("qual-name").textContent = summary.name || "";
    $("qual-instructions").textContent = summary.instructions || "";
    showStage("stage-qual");
    return showQualificationResult({ passed: false, retake_at: summary.retake_at, attempts_left: summary.attempts_left });
  }
  return api("GET", "campaigns/" + cfg.campaign + "/qualifications/").then(function (res) {
    if (handleAuth(res)) { return; }
    if (res.status !== 200) { showError(errorText(res)); return; }
    const all = list(res.data);
    const found = all.filter(function (q) { return String(q.id) === String(summary.id); })[0] || all[0];
    if (!found) { return flow.nextHit(); }
    qual = found;
    renderQualification(found, summary);
  });
}

function renderQualification(q, summary) {
  $("qual-name").textContent = q.name || summary.name || "";
  $("qual-instructions").textContent = q.instructions || summary.instructions ||
    "Answer every item. You must pass this short test before you can work on these questions.";
  const box = $("qual-items");
  clear(box);
  (q.items || []).forEach(function (item, i) {
    const li = el("li", { "class": "qual-item" });
    const fs = el("fieldset");
    const legendId = "qual-legend-" + i;
    fs.appendChild(el("legend", { id: legendId }, (i + 1) + ". " + (item.text || "")));
    const side = sideOf(item);
    const img = el("img", { src: item.image_url, alt: "Test image " + (i + 1) + ". " + sideDescription(side), "class": "qual-image" });
    const frame = el("div", { "class": "frame", "data-side": side || "none" });
    const pic = el("div", { "class": "pic" });
    pic.appendChild(img);
    pic.appendChild(sideCue(side));
    frame.appendChild(pic);
    fs.appendChild(frame);
    const group = el("div", { "class": "qual-choices", role: "radiogroup", "aria-labelledby": legendId });
    (item.choices || []).forEach(function (choice, j) {
      const id = "qual-" + i + "-" + j;
      const label = el("label", { "for": id, "class": "radio" });
      label.appendChild(el("input", { type: "radio", id: id, name: "item-" + (item.id !== undefined ? item.id : i), value: choice, required: "" }));
      label.appendChild(el("span", null, choice));
      group.appendChild(label);
    });
    fs.appendChild(group);
    li.appendChild(fs);
    box.appendChild(li);
  });
  const result = $("qual-result");
  result.hidden = true;
  clear(result);
  $("qual-form").hidden = false;
  $("qual-submit").disabled = false;
  showStage("stage-qual");
}

function submitAttempt(ev) {
  ev.preventDefault();
  clearError();
  if (!qual) { return; }
  const answers = [];
  const missing = [];
  (qual.items || []).forEach(function (item, i) {
    const checked = document.querySelector('input[name="item-' + (item.id !== undefined ? item.id : i) + '"]:checked');
    if (!checked) { missing.push(i + 1); return; }
    answers.push({ item: item.id, choice: checked.value });
  });
  if (missing.length) {
    showError("Please answer every item (missing: " + missing.join(", ") + ").");
    return;
  }
  const button = $("qual-submit");
  button.disabled = true;
  const attemptPath = (cfg.mode === "mturk" ? "mturk/qualifications/" : "qualifications/") + qual.id + "/attempts/";
  api("POST", attemptPath, { answers: answers }).then(function (res) {
    button.disabled = false;
    if (handleAuth(res)) { return; }
    if (res.status >= 300 || !res.data) { showError(errorText(res)); return; }
    showQualificationResult(res.data);
  });
}

function showQualificationResult(r) {
  const result = $("qual-result");
  clear(result);
  // The result is pass/fail only (never how many were right: that would give the key away).
  const score = "";
  const final = r.retake_at === null && r.attempts_left === 0;
  let heading, para, button = null;
  if (r.passed) {
    heading = el("h2", { tabindex: "-1", "class": "result-pass" }, "Passed");
    para = el("p", null, "Well done." + score + " You can now start working.");
    button = el("button", { type: "button", "class": "btn primary", id: "qual-continue" }, "Continue");
    button.addEventListener("click", function () { flow.start(); });
  } else {
    heading = el("h2", { tabindex: "-1", "class": "result-fail" }, "Not passed");
    const retake = r.retake_at ? new Date(r.retake_at) : null;
    let when;
    if (final) {
      when = " You have used all your attempts for this test.";
    } else if (retake && retake.getTime() > Date.now()) {
      when = " You may retake the test after " + formatTime(r.retake_at) + ".";
    } else {
      when = " You may retake the test now.";
    }
    para = el("p", { id: "qual-retake-text" }, "This time the test was not passed." + score + when);
    if (final && cfg.mode === "prolific") {
      button = el("button", { type: "button", "class": "btn", id: "qual-finish" }, "Return to Prolific");
      button.addEventListener("click", prolificFinish);
    } else if (!final) {
      button = el("button", { type: "button", "class": "btn", id: "qual-retake" }, "Retake the test");
      if (retake && retake.getTime() > Date.now()) {
        button.disabled = true;
        window.setTimeout(function () { button.disabled = false; }, Math.min(retake.getTime() - Date.now(), 2147483000));
      }
      button.addEventListener("click", function () { flow.start(); });
    }
  }
  result.appendChild(heading);
  result.appendChild(para);
  if (button) { result.appendChild(button); }
  $("qual-form").hidden = true;
  result.hidden = false;
  announce((r.passed ? "Passed." : "Not passed.") + score);
  heading.focus();
}

export function initQualification(callbacks) {
  flow = callbacks;
  $("qual-form").addEventListener("submit", submitAttempt);
}
