/* The task page's optional "About you" form: self-reported demographics with their own consent.
 *
 * Only when the campaign asks (GET /api/campaigns/{id}/demographics/ says `ask`). The dialog opens by
 * itself once, when the questions first appear (never again after "Not now" or a save, remembered in
 * localStorage), and from the "About you (optional)" button at any time; saving posts the answers
 * with the consent version shown; "Withdraw" erases them (POST /api/annotators/me/demographics/withdraw/).
 * No inline code; API text is written with textContent only. While the dialog is open its key
 * presses stay inside it (the task's shortcut keys must not answer a question behind it).
 */
(function () {
  "use strict";

  var app = document.getElementById("work-app");
  var dialog = document.getElementById("demographics-dialog");
  if (!app || !dialog) { return; }
  var cfg = {
    campaign: app.dataset.campaign,
    apiRoot: app.dataset.apiRoot || "/api/",
    csrf: app.dataset.csrf || "",
    authToken: app.dataset.authToken || "",
  };
  function $(id) { return document.getElementById(id); }
  var form = null;   // GET .../demographics/ for this annotator
  var before = null; // what had the focus when the dialog opened (given back on close)
  var dismissKey = "t2i-demographics-seen-" + cfg.campaign;

  function api(method, path, body) {
    var opts = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (cfg.authToken) { opts.headers["Authorization"] = "Token " + cfg.authToken; }
    if (method !== "GET") { opts.headers["X-CSRFToken"] = cfg.csrf; }
    if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
    return fetch(cfg.apiRoot + path, opts).then(function (resp) {
      return resp.json().then(function (data) { return { status: resp.status, data: data }; },
        function () { return { status: resp.status, data: null }; });
    }, function () { return { status: 0, data: { detail: "Could not reach the server." } }; });
  }

  function errorText(res) {
    var data = res.data || {};
    var errors = data.errors || {};
    var parts = Object.keys(errors).map(function (k) { return k + ": " + [].concat(errors[k]).join(" "); });
    return (data.detail || "Something went wrong.") + (parts.length ? " (" + parts.join("; ") + ")" : "");
  }
  function showError(text) { var box = $("demographics-error"); box.textContent = text; box.hidden = !text; }

  function remembered() { try { return window.localStorage.getItem(dismissKey) === "1"; } catch (e) { return false; } }
  function remember() { try { window.localStorage.setItem(dismissKey, "1"); } catch (e) { /* private mode */ } }

  function option(select, value, label) {
    var o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    select.appendChild(o);
  }

  function build(f) {
    $("demographics-consent-text").textContent = f.consent_text || "";
    var fields = f.fields || [];
    $("demographics-gender").hidden = fields.indexOf("gender") === -1;
    $("demographics-age").hidden = fields.indexOf("age_band") === -1;
    $("demographics-country").hidden = fields.indexOf("country") === -1;
    var box = $("demographics-gender-options");
    ((f.choices || {}).gender || []).forEach(function (pair, i) {
      var label = document.createElement("label");
      var input = document.createElement("input");
      input.type = "radio";
      input.name = "demographics-gender";
      input.value = pair[0];
      input.id = "demographics-gender-" + i;
      label.appendChild(input);
      label.appendChild(document.createTextNode(pair[1]));
      box.appendChild(label);
      input.addEventListener("change", syncDescribe);
    });
    ((f.choices || {}).age_band || []).forEach(function (p) { option($("demographics-age-select"), p[0], p[1]); });
    ((f.choices || {}).country || []).forEach(function (p) { option($("demographics-country-select"), p[0], p[1]); });
    fill(f.response);
  }

  function syncDescribe() {
    var chosen = dialog.querySelector("input[name='demographics-gender']:checked");
    var text = $("demographics-gender-text");
    text.disabled = !(chosen && chosen.value === "self_describe");
    if (text.disabled) { text.value = ""; }
  }

  function fill(response) {
    var answers = (response && response.answers) || {};
    var has = Object.keys(answers).length > 0;
    Array.prototype.forEach.call(dialog.querySelectorAll("input[name='demographics-gender']"), function (r) {
      r.checked = r.value === answers.gender;
    });
    $("demographics-gender-text").value = answers.gender_self_described || "";
    syncDescribe();
    $("demographics-gender-text").value = answers.gender_self_described || "";
    $("demographics-age-select").value = answers.age_band || "";
    $("demographics-country-select").value = answers.country || "";
    $("demographics-consent").checked = false;
    $("demographics-saved").hidden = !has;
    $("demographics-saved-text").textContent = has ?
      "Your answers are saved. You can change them above, or withdraw them: they are then erased (your answers to the task stay)." : "";
  }

  function open() {
    before = document.activeElement;
    showError("");
    if (typeof dialog.showModal === "function") { dialog.showModal(); } else { dialog.setAttribute("open", ""); }
    $("demographics-heading").focus();
  }
  function close() {
    remember();
    if (typeof dialog.close === "function") { dialog.close(); } else { dialog.removeAttribute("open"); }
    (before && before !== document.body && document.contains(before) ? before : $("demographics-open")).focus();
  }

  function answers() {
    var out = {};
    var chosen = dialog.querySelector("input[name='demographics-gender']:checked");
    if (chosen) { out.gender = chosen.value; }
    if (chosen && chosen.value === "self_describe") { out.gender_self_described = $("demographics-gender-text").value; }
    if ($("demographics-age-select").value) { out.age_band = $("demographics-age-select").value; }
    if ($("demographics-country-select").value) { out.country = $("demographics-country-select").value; }
    return out;
  }

  $("demographics-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (!$("demographics-consent").checked) {
      showError("Tick the box to agree, or choose \u201CNot now\u201D: every question is optional.");
      $("demographics-consent").focus();
      return;
    }
    $("demographics-submit").disabled = true;
    api("POST", "campaigns/" + cfg.campaign + "/demographics/",
      { consent: true, consent_version: form.consent_version, answers: answers() }).then(function (res) {
      $("demographics-submit").disabled = false;
      if (res.status !== 200) { showError(errorText(res)); return; }
      form.response = res.data;
      fill(res.data);
      showError("");
      $("demographics-saved-text").textContent = "Thank you, your answers were saved. " + $("demographics-saved-text").textContent;
      remember();
    });
  });

  $("demographics-withdraw").addEventListener("click", function () {
    $("demographics-withdraw").disabled = true;
    api("POST", "annotators/me/demographics/withdraw/", {}).then(function (res) {
      $("demographics-withdraw").disabled = false;
      if (res.status !== 200) { showError(errorText(res)); return; }
      form.response = null;
      fill(null);
      $("demographics-saved").hidden = false;
      $("demographics-withdraw").hidden = true;
      $("demographics-saved-text").textContent = "Your demographic answers were erased.";
    });
  });

  $("demographics-close").addEventListener("click", close);
  dialog.addEventListener("cancel", function () { remember(); });
  // The task's shortcut keys listen on the document: keep this dialog's keys to itself.
  dialog.addEventListener("keydown", function (ev) { ev.stopPropagation(); });
  $("demographics-open").addEventListener("click", function () {
    $("demographics-withdraw").hidden = false;
    fill(form.response);
    open();
  });

  function whenTaskShows(callback) {
    var stage = $("stage-task");
    if (!stage) { return; }
    if (!stage.hidden) { callback(); return; }
    var seen = new MutationObserver(function () {
      if (!stage.hidden) { seen.disconnect(); callback(); }
    });
    seen.observe(stage, { attributes: true, attributeFilter: ["hidden"] });
  }

  api("GET", "campaigns/" + cfg.campaign + "/demographics/").then(function (res) {
    if (res.status !== 200 || !res.data || !res.data.ask || !res.data.choices) { return; }
    form = res.data;
    build(form);
    $("demographics-open").hidden = false;
    if (!form.response && !remembered()) { whenTaskShows(open); }
  });
})();
