/* The annotator's work page: consent -> qualification tests -> HITs, driven by the public API.
 *
 * No framework and no inline code (Content-Security-Policy friendly): configuration comes from the
 * data- attributes of #work-app, every element exists in the server-rendered template, and API data
 * is written with textContent only (never innerHTML). Between questions and HITs the page never
 * reloads: the next HIT is fetched with POST /api/campaigns/{id}/assignments/ after each submit.
 *
 * Crowd-platform modes (data-mode, set by the crowd app's pages):
 *  - "mturk": the HIT comes from POST /api/mturk/{campaign}/assignment/ (tied to the accepted MTurk
 *    assignment), qualification attempts also grant the MTurk qualification, API calls carry the
 *    annotator's token (MTurk frames the page: third-party cookies may not be sent), and once our API
 *    stored the answers the server-built #mturk-submit-form is posted to MTurk's externalSubmit.
 *  - "prolific": after each HIT, on "no work left" and on a test failed for good the page goes to
 *    data-finish-url, where the server decides between more work and the completion / screen-out code.
 */
(function () {
  "use strict";

  var app = document.getElementById("work-app");
  if (!app) { return; }
  var cfg = {
    campaign: app.dataset.campaign,
    apiRoot: app.dataset.apiRoot || "/api/",
    csrf: app.dataset.csrf || "",
    loginUrl: app.dataset.loginUrl || "/",
    mode: app.dataset.mode || "",
    authToken: app.dataset.authToken || "",
    mturkAssignmentId: app.dataset.mturkAssignmentId || "",
    mturkHitId: app.dataset.mturkHitId || "",
    finishUrl: app.dataset.finishUrl || "",
  };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) { Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); }); }
    if (text !== undefined && text !== null) { node.textContent = text; }
    return node;
  }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }
  function now() { return (window.performance && performance.now) ? performance.now() : Date.now(); }
  function list(data) { return Array.isArray(data) ? data : (data && Array.isArray(data.results) ? data.results : []); }

  /* ---------- API ---------- */

  function api(method, path, body) {
    var opts = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (cfg.authToken) { opts.headers["Authorization"] = "Token " + cfg.authToken; }
    if (method !== "GET") { opts.headers["X-CSRFToken"] = cfg.csrf; }
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    return fetch(cfg.apiRoot + path, opts).then(function (resp) {
      if (resp.status === 204) { return { status: 204, data: null }; }
      return resp.json().then(
        function (data) { return { status: resp.status, data: data }; },
        function () { return { status: resp.status, data: null }; });
    }, function () {
      return { status: 0, data: { detail: "Could not reach the server. Check your connection and try again." } };
    });
  }

  /* Errors have the shape {"detail": "...", "errors": {"field": ["..."]}}. */
  function errorText(res) {
    var data = res.data || {};
    var text = data.detail || ("Something went wrong (HTTP " + res.status + ").");
    var errors = data.errors || {};
    var parts = Object.keys(errors).map(function (field) {
      var msgs = Array.isArray(errors[field]) ? errors[field].join(" ") : String(errors[field]);
      return field === "non_field_errors" ? msgs : field + ": " + msgs;
    });
    return parts.length ? text + " (" + parts.join("; ") + ")" : text;
  }

  /* ---------- messages and stages ---------- */

  var alertBox = $("alert");
  var statusBox = $("status");
  function showError(text) {
    alertBox.textContent = text;
    alertBox.hidden = false;
  }
  function clearError() { alertBox.hidden = true; alertBox.textContent = ""; }
  function announce(text) { statusBox.textContent = text; }

  var STAGES = Array.prototype.map.call(app.querySelectorAll("section[id^='stage-']"), function (n) { return n.id; });
  var currentStage = "stage-loading";
  function showStage(id, focusTarget) {
    STAGES.forEach(function (s) { var node = $(s); if (node) { node.hidden = (s !== id); } });
    currentStage = id;
    if (id !== "stage-task") { stopHeartbeat(); }
    var target = focusTarget || $(id).querySelector("h1, h2");
    if (target) {
      if (!target.hasAttribute("tabindex")) { target.setAttribute("tabindex", "-1"); }
      target.focus({ preventScroll: false });
    }
  }

  /* Prolific: the server decides what comes next (more work, completion or screen-out code). */
  function prolificFinish() {
    showStage("stage-prolific-finish");
    window.location.href = cfg.finishUrl;
  }

  /* MTurk: our API has the answers; now tell MTurk (form action built by the server). */
  function mturkSubmit(hitId, count) {
    $("mturk-submit-hit").value = String(hitId);
    $("mturk-submit-answers").value = String(count);
    showStage("stage-mturk-submit");
    announce("Your answers were saved. Submitting the HIT to MTurk…");
    $("mturk-submit-form").submit();
  }

  function handleAuth(res) {
    if (res.status === 401 || (res.status === 403 && /credentials|authenticat/i.test((res.data || {}).detail || ""))) {
      window.location.href = cfg.loginUrl;
      return true;
    }
    return false;
  }

  /* ---------- flow: task info -> consent -> qualifications -> HITs ---------- */

  var task = null;

  function start() {
    clearError();
    return api("GET", "campaigns/" + cfg.campaign + "/task/").then(function (res) {
      if (handleAuth(res)) { return; }
      if (res.status !== 200) { return blocked(errorText(res)); }
      task = res.data || {};
      renderTaskInfo(task);
      if (!isConsented(task)) { return showConsent(task); }
      if (task.enrollment_status && task.enrollment_status !== "active") {
        return blocked("Your participation in this task is " + task.enrollment_status +
          (task.status_reason ? ": " + task.status_reason : ".") + " Please contact the researchers if you think this is a mistake.");
      }
      var pending = pendingQualifications(task);
      if (pending.length) { return showQualification(pending[0]); }
      return nextHit();
    });
  }

  function blocked(text) {
    $("blocked-text").textContent = text;
    showStage("stage-blocked");
  }

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

  function renderTaskInfo(t) {
    var name = t.name || t.campaign_name || (t.campaign && t.campaign.name) || "";
    if (name) { $("campaign-name").textContent = name; }
    var instr = t.instructions || "";
    $("instructions-text").textContent = instr || "Answer each question about the image shown.";
    var examples = t.examples || t.example_images || [];
    var box = $("examples");
    clear(box);
    examples.forEach(function (ex, i) {
      var url = typeof ex === "string" ? ex : (ex.image_url || ex.url);
      if (!url) { return; }
      var caption = typeof ex === "string" ? "" : (ex.caption || ex.label || ex.text || ex.answer || "");
      var fig = el("figure", { "class": "example" });
      var img = el("img", { src: url, alt: caption ? "Example " + (i + 1) + ": " + caption : "Example image " + (i + 1), loading: "lazy" });
      fig.appendChild(img);
      if (caption) { fig.appendChild(el("figcaption", null, caption)); }
      box.appendChild(fig);
    });
    $("examples-heading").hidden = box.children.length === 0;
  }

  /* ---------- consent ---------- */

  function showConsent(t) {
    $("consent-text").textContent = t.consent_text || t.consent || "";
    $("consent-check").checked = false;
    showStage("stage-consent");
  }

  $("consent-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    clearError();
    if (!$("consent-check").checked) {
      showError("Please tick the box to confirm that you agree, or close this page if you do not.");
      $("consent-check").focus();
      return;
    }
    var button = $("consent-submit");
    button.disabled = true;
    api("POST", "campaigns/" + cfg.campaign + "/consent/", { consent: true }).then(function (res) {
      button.disabled = false;
      if (handleAuth(res)) { return; }
      if (res.status >= 300) { showError(errorText(res)); return; }
      start();
    });
  });

  /* ---------- qualification tests ---------- */

  var qual = null; // {id, name, items}

  function formatTime(iso) {
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return iso; }
    return d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  }

  function showQualification(summary) {
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
      var all = list(res.data);
      var found = all.filter(function (q) { return String(q.id) === String(summary.id); })[0] || all[0];
      if (!found) { return nextHit(); }
      qual = found;
      renderQualification(found, summary);
    });
  }

  function renderQualification(q, summary) {
    $("qual-name").textContent = q.name || summary.name || "";
    $("qual-instructions").textContent = q.instructions || summary.instructions ||
      "Answer every item. You must pass this short test before you can work on these questions.";
    var box = $("qual-items");
    clear(box);
    (q.items || []).forEach(function (item, i) {
      var li = el("li", { "class": "qual-item" });
      var fs = el("fieldset");
      var legendId = "qual-legend-" + i;
      var legend = el("legend", { id: legendId }, (i + 1) + ". " + (item.text || ""));
      fs.appendChild(legend);
      var img = el("img", { src: item.image_url, alt: "Test image " + (i + 1) + ". " + sideDescription(sideOf(item)), "class": "qual-image" });
      var frame = el("div", { "class": "frame", "data-side": sideOf(item) || "none" });
      frame.appendChild(img);
      frame.appendChild(sideCue(sideOf(item)));
      fs.appendChild(frame);
      var group = el("div", { "class": "qual-choices", role: "radiogroup", "aria-labelledby": legendId });
      (item.choices || []).forEach(function (choice, j) {
        var id = "qual-" + i + "-" + j;
        var label = el("label", { "for": id, "class": "radio" });
        var input = el("input", { type: "radio", id: id, name: "item-" + (item.id !== undefined ? item.id : i), value: choice, required: "" });
        label.appendChild(input);
        label.appendChild(el("span", null, choice));
        group.appendChild(label);
      });
      fs.appendChild(group);
      li.appendChild(fs);
      box.appendChild(li);
    });
    var result = $("qual-result");
    result.hidden = true;
    clear(result);
    $("qual-form").hidden = false;
    $("qual-submit").disabled = false;
    showStage("stage-qual");
  }

  $("qual-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    clearError();
    if (!qual) { return; }
    var answers = [];
    var missing = [];
    (qual.items || []).forEach(function (item, i) {
      var checked = document.querySelector('input[name="item-' + (item.id !== undefined ? item.id : i) + '"]:checked');
      if (!checked) { missing.push(i + 1); return; }
      answers.push({ item: item.id, choice: checked.value });
    });
    if (missing.length) {
      showError("Please answer every item (missing: " + missing.join(", ") + ").");
      return;
    }
    var button = $("qual-submit");
    button.disabled = true;
    var attemptPath = (cfg.mode === "mturk" ? "mturk/qualifications/" : "qualifications/") + qual.id + "/attempts/";
    api("POST", attemptPath, { answers: answers }).then(function (res) {
      button.disabled = false;
      if (handleAuth(res)) { return; }
      if (res.status >= 300 || !res.data) { showError(errorText(res)); return; }
      showQualificationResult(res.data);
    });
  });

  function showQualificationResult(r) {
    var result = $("qual-result");
    clear(result);
    // The result is pass/fail only (never how many were right: that would give the key away).
    var score = "";
    var heading, para, button = null;
    if (r.passed) {
      heading = el("h2", { tabindex: "-1", "class": "result-pass" }, "Passed");
      para = el("p", null, "Well done." + score + " You can now start working.");
      button = el("button", { type: "button", "class": "btn primary", id: "qual-continue" }, "Continue");
      button.addEventListener("click", function () { start(); });
    } else {
      heading = el("h2", { tabindex: "-1", "class": "result-fail" }, "Not passed");
      var retake = r.retake_at ? new Date(r.retake_at) : null;
      var when;
      if (r.retake_at === null && r.attempts_left === 0) {
        when = " You have used all your attempts for this test.";
      } else if (retake && retake.getTime() > Date.now()) {
        when = " You may retake the test after " + formatTime(r.retake_at) + ".";
      } else {
        when = " You may retake the test now.";
      }
      para = el("p", { id: "qual-retake-text" }, "This time the test was not passed." + score + when);
      if (r.retake_at === null && r.attempts_left === 0 && cfg.mode === "prolific") {
        button = el("button", { type: "button", "class": "btn", id: "qual-finish" }, "Return to Prolific");
        button.addEventListener("click", prolificFinish);
      } else if (!(r.retake_at === null && r.attempts_left === 0)) {
        button = el("button", { type: "button", "class": "btn", id: "qual-retake" }, "Retake the test");
        if (retake && retake.getTime() > Date.now()) {
          button.disabled = true;
          window.setTimeout(function () { button.disabled = false; }, Math.min(retake.getTime() - Date.now(), 2147483000));
        }
        button.addEventListener("click", function () { start(); });
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

  /* ---------- HITs ---------- */

  var hit = null;        // {id, expires_at, questions: [...]}
  var index = 0;         // question shown
  var answers = [];      // per question: {choice, time_ms}
  var shownAt = null;    // when the current question was put on screen
  var spent = [];        // ms already spent on each question on earlier visits
  var busy = false;
  var heartbeatTimer = null;

  function nextHit() {
    clearError();
    busy = true;
    announce("Loading the next set of questions…");
    var request = cfg.mode === "mturk" ?
      api("POST", "mturk/" + cfg.campaign + "/assignment/", { assignmentId: cfg.mturkAssignmentId, hitId: cfg.mturkHitId }) :
      api("POST", "campaigns/" + cfg.campaign + "/assignments/", {});
    return request.then(function (res) {
      busy = false;
      if (handleAuth(res)) { return; }
      if (res.status === 204) {
        hit = null;
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
    });
  }

  function beginHit(data) {
    if (!data.questions || !data.questions.length) { hit = null; showStage("stage-done"); return; }
    hit = data;
    answers = hit.questions.map(function () { return null; });
    spent = hit.questions.map(function () { return 0; });
    index = 0;
    restoreAnswers();
    var resume = firstUnanswered();
    $("submit-hint").textContent = "";
    $("instructions").open = resume <= 0; // instructions and examples at the start of every HIT
    hit.questions.forEach(function (q) { var img = new Image(); img.src = q.image_url; }); // preload
    showStage("stage-task", $("progress"));
    showQuestion(resume === -1 ? hit.questions.length - 1 : resume);
    startHeartbeat();
  }

  /* Answers survive a reload of the page (the API hands back the same HIT while its lease runs). */
  function storageKey() { return "t2i-hit-" + hit.id; }
  function saveAnswers() {
    try { window.sessionStorage.setItem(storageKey(), JSON.stringify({ answers: answers, spent: spent })); } catch (e) { /* private mode */ }
  }
  function forgetAnswers() {
    try { window.sessionStorage.removeItem(storageKey()); } catch (e) { /* private mode */ }
  }
  function restoreAnswers() {
    var saved = null;
    try { saved = JSON.parse(window.sessionStorage.getItem(storageKey()) || "null"); } catch (e) { saved = null; }
    if (!saved || !Array.isArray(saved.answers) || saved.answers.length !== hit.questions.length) { return; }
    saved.answers.forEach(function (a, k) {
      if (a && hit.questions[k].choices.indexOf(a.choice) !== -1) { answers[k] = a; spent[k] = saved.spent[k] || 0; }
    });
  }

  /* Which person a PST question asks about: the API's slot/position when it sends one, else the
   * question text ("... on the left ..."). GEP questions have no side. */
  function sideOf(q) {
    var s = q.slot || q.position || q.side;
    if (s === "left" || s === "right") { return s; }
    var m = /\bon the (left|right)\b/i.exec(q.text || "");
    return m ? m[1].toLowerCase() : null;
  }
  function sideDescription(side) {
    return side ? "The question is about the person on the " + side + " (outlined)." : "";
  }
  function sideCue(side) {
    var cue = el("div", { "class": "side-cue", "aria-hidden": "true" });
    if (side) {
      cue.appendChild(el("div", { "class": "side-dim" }));
      cue.appendChild(el("div", { "class": "side-outline" }));
      cue.appendChild(el("span", { "class": "side-label" }, side === "left" ? "\u25C0 Left person" : "Right person \u25B6"));
    }
    return cue;
  }

  function shortcutKeys(choices) {
    var firsts = choices.map(function (c) { return String(c).charAt(0).toUpperCase(); });
    var unique = firsts.every(function (f, i) { return /[A-Z]/.test(f) && firsts.indexOf(f) === i; });
    return choices.map(function (c, i) { return unique ? firsts[i] : String(i + 1); });
  }

  function showQuestion(i) {
    var q = hit.questions[i];
    index = i;
    var total = hit.questions.length;
    $("progress").textContent = "Question " + (i + 1) + " / " + total;
    var bar = $("progress-bar");
    bar.max = total;
    bar.value = answers.filter(Boolean).length;
    $("q-text").textContent = q.text || "";

    var side = sideOf(q);
    var frame = $("frame");
    frame.setAttribute("data-side", side || "none");
    var oldCue = frame.querySelector(".side-cue");
    frame.replaceChild(sideCue(side), oldCue);
    $("side-text").textContent = sideDescription(side);
    $("side-text").hidden = !side;

    var img = $("q-image");
    img.alt = "Image " + (i + 1) + " of " + total + ". " + sideDescription(side);
    img.onerror = function () {
      if (index === i) { showError("The image could not be loaded. Answer \u201CCannot identify\u201D if you cannot see it, or reload the page."); }
    };
    if (img.getAttribute("src") !== q.image_url) { img.src = q.image_url; }
    shownAt = now(); // the HIT's images were preloaded when it began

    var keys = shortcutKeys(q.choices || []);
    var group = $("choices");
    clear(group);
    var chosen = answers[i] && answers[i].choice;
    (q.choices || []).forEach(function (choice, j) {
      var b = el("button", {
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

    var hints = (q.choices || []).map(function (c, j) { return keys[j] + " = " + c; });
    $("key-hints").textContent = "Keys: " + hints.join(", ") + ". Enter = " + (i === total - 1 ? "submit" : "next") + ", Backspace = back.";
    $("back").disabled = i === 0;
    updateNext();
    $("q-text").focus({ preventScroll: true });
  }

  function updateNext() {
    var last = index === hit.questions.length - 1;
    var next = $("next");
    var label = next.querySelector(".label");
    label.textContent = last ? "Submit" : "Next";
    next.classList.toggle("primary", last && allAnswered());
    next.disabled = busy || !answers[index];
  }
  function allAnswered() { return answers.every(Boolean); }

  function elapsed() {
    var base = spent[index] || 0;
    return Math.max(0, Math.round(base + (shownAt === null ? 0 : now() - shownAt)));
  }
  function leaveQuestion() {
    if (shownAt !== null) { spent[index] = (spent[index] || 0) + (now() - shownAt); }
    shownAt = null;
  }

  function choose(j) {
    if (busy || !hit) { return; }
    var q = hit.questions[index];
    var choice = q.choices[j];
    // time_ms: from the question being shown (image on screen) to this answer, summed over visits.
    answers[index] = { choice: choice, time_ms: elapsed() };
    var buttons = $("choices").querySelectorAll("button.choice");
    Array.prototype.forEach.call(buttons, function (b, k) {
      b.setAttribute("aria-checked", k === j ? "true" : "false");
      b.tabIndex = k === j ? 0 : -1;
    });
    saveAnswers();
    $("progress-bar").value = answers.filter(Boolean).length;
    $("instructions").open = false; // read at the start of the HIT; out of the way once answering
    $("saved-note").textContent = "";
    announce("Answered " + choice + ".");
    var last = index === hit.questions.length - 1;
    if (!last) {
      go(index + 1);
    } else {
      updateNext();
      var missing = firstUnanswered();
      $("submit-hint").textContent = missing === -1 ? "All questions answered. Press Enter or the Submit button to send your answers." :
        "Question " + (missing + 1) + " has no answer yet.";
      $("next").focus();
    }
  }

  function firstUnanswered() {
    for (var k = 0; k < answers.length; k++) { if (!answers[k]) { return k; } }
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
    var missing = firstUnanswered();
    if (missing !== -1) { go(missing); showError("Question " + (missing + 1) + " has no answer yet."); return; }
    submitHit();
  }

  function submitHit() {
    busy = true;
    leaveQuestion();
    updateNext();
    announce("Sending your answers…");
    var body = {
      answers: hit.questions.map(function (q, k) {
        return { question: q.id, choice: answers[k].choice, time_ms: answers[k].time_ms };
      }),
    };
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
      nextHit();
    });
  }

  function leaseExpired(res) {
    stopHeartbeat();
    if (hit) { forgetAnswers(); }
    hit = null;
    // The API says why (lease ran out and was re-assigned, HIT returned, ...); the template has a default.
    var detail = res && res.data && res.data.detail;
    if (detail) { $("expired-detail").textContent = detail; }
    showStage("stage-expired");
    announce("This set of questions expired.");
  }

  /* ---------- heartbeat: keep the lease while the page is open ---------- */

  function heartbeatDelay() {
    var expires = hit && hit.expires_at ? new Date(hit.expires_at).getTime() - Date.now() : 0;
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
    if (!hit || currentStage !== "stage-task") { return; }
    var id = hit.id;
    api("POST", "assignments/" + id + "/heartbeat/", {}).then(function (res) {
      if (!hit || hit.id !== id) { return; }
      if (res.status === 409 || res.status === 410) { return leaseExpired(res); }
      if (res.status === 200 && res.data && res.data.expires_at) { hit.expires_at = res.data.expires_at; }
      startHeartbeat();
    });
  }
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && hit && currentStage === "stage-task") { stopHeartbeat(); beat(); }
  });

  /* ---------- controls and keyboard ---------- */

  $("next").addEventListener("click", forward);
  $("back").addEventListener("click", function () { go(index - 1); });
  $("new-hit").addEventListener("click", function () { nextHit(); });
  $("check-again").addEventListener("click", function () { start(); });

  // Arrow keys move the focus between the choices (roving tabindex); Space/Enter picks one.
  $("choices").addEventListener("keydown", function (ev) {
    var keys = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
    if (!(ev.key in keys)) { return; }
    var buttons = Array.prototype.slice.call($("choices").querySelectorAll("button.choice"));
    var at = buttons.indexOf(document.activeElement);
    if (at === -1) { return; }
    ev.preventDefault();
    ev.stopPropagation();
    var to = buttons[(at + keys[ev.key] + buttons.length) % buttons.length];
    buttons.forEach(function (b) { b.tabIndex = b === to ? 0 : -1; });
    to.focus();
  });

  document.addEventListener("keydown", function (ev) {
    if (currentStage !== "stage-task" || !hit || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var t = ev.target;
    var tag = t && t.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (t && t.isContentEditable)) { return; }
    // A focused button or summary handles Enter/Space itself (native activation).
    if ((tag === "BUTTON" || tag === "SUMMARY" || tag === "A") && (ev.key === "Enter" || ev.key === " ")) { return; }
    if (ev.key === "Enter") { ev.preventDefault(); forward(); return; }
    if (ev.key === "Backspace" || ev.key === "ArrowLeft") { ev.preventDefault(); go(index - 1); return; }
    if (ev.key === "ArrowRight") { ev.preventDefault(); if (answers[index]) { forward(); } return; }
    if (ev.key.length !== 1) { return; }
    var key = ev.key.toUpperCase();
    var buttons = $("choices").querySelectorAll("button.choice");
    for (var k = 0; k < buttons.length; k++) {
      if (buttons[k].getAttribute("data-key") === key || String(k + 1) === key) {
        ev.preventDefault();
        choose(k);
        return;
      }
    }
  });

  start();
})();
