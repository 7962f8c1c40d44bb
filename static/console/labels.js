/* Machine labels page: run / cancel a labeller and import a label file through the autolabel API
   (session + CSRF), then show the result; while a labeller runs, poll the campaign's progress and
   update the rows, reloading once nothing runs any more (agreement is then recomputed). */
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const page = document.getElementById("labels-page");
  if (!page) return;
  const campaign = page.dataset.campaign;
  const message = document.getElementById("labels-message");
  function say(text) { message.hidden = false; message.textContent = text; }
  function firstError(data, fallback) {
    if (data && data.errors) {
      for (const key of Object.keys(data.errors)) { return key + ": " + data.errors[key][0]; }
    }
    return (data && data.detail) || fallback;
  }

  page.querySelectorAll("button[data-action]").forEach(function (button) {
    button.addEventListener("click", async function () {
      const action = button.dataset.action;
      const url = "/api/campaigns/" + campaign + "/autolabel/" + (action === "cancel" ? "cancel/" : "");
      button.disabled = true;
      const r = await window.Console.api("POST", url, {labeller: button.dataset.labeller});
      if (r.ok) { window.location.reload(); return; }
      button.disabled = false;
      say(button.dataset.labeller + ": " + firstError(r.data, "failed (" + r.status + ")"));
    });
  });

  const form = document.getElementById("import-form");
  const errors = document.getElementById("import-errors");
  form.addEventListener("submit", async function (ev) {
    ev.preventDefault();
    errors.hidden = true;
    errors.textContent = "";
    const res = await fetch("/api/campaigns/" + campaign + "/machine-labels/import/", {
      method: "POST", body: new FormData(form), credentials: "same-origin",
      headers: {"X-CSRFToken": window.Console.csrfToken(), "Accept": "application/json"}});
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (res.ok) { say("Imported " + data.rows + " labels as " + data.labeller + "."); window.setTimeout(function () { window.location.reload(); }, 800); return; }
    const items = data && data.errors ? Object.entries(data.errors) : [["", [(data && data.detail) || ("failed (" + res.status + ")")]]];
    for (const [path, msgs] of items.slice(0, 20)) {
      const li = document.createElement("li");
      li.textContent = (path ? path + ": " : "") + msgs.join("; ");
      errors.appendChild(li);
    }
    errors.hidden = false;
  });

  if (page.hasAttribute("data-running")) {
    const poll = async function () {
      const r = await window.Console.api("GET", "/api/campaigns/" + campaign + "/");
      const progress = (r.data && r.data.progress && r.data.progress.autolabel) || {};
      let running = false;
      for (const [name, p] of Object.entries(progress)) {
        const row = document.getElementById("labeller-" + name);
        if (!row) continue;
        const bar = row.querySelector("progress");
        if (bar) { bar.max = p.total || 1; bar.value = p.done; }
        const text = row.querySelector("[data-field=progress]");
        if (text) text.textContent = p.done + " / " + p.total + (p.failed ? ", " + p.failed + " failed" : "") + " · " + p.status;
        if (p.status === "running") running = true;
      }
      if (!running) { window.location.reload(); return; }
      window.setTimeout(poll, 2000);
    };
    window.setTimeout(poll, 2000);
  }
});
