/* Image review: open an image (prompt, seed, parameters, provenance) in a dialog; exclude it with a
   reason or include it again through POST /api/images/{id}/exclude/ and /include/. */
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const dataEl = document.getElementById("image-data");
  const dialog = document.getElementById("image-dialog");
  if (!dataEl || !dialog) return;
  const images = JSON.parse(dataEl.textContent);
  const form = document.getElementById("exclude-form");
  let current = null;
  let opener = null;

  function field(dl, name, value) {
    if (value === null || value === undefined || value === "") return;
    const dt = document.createElement("dt"); dt.textContent = name;
    const dd = document.createElement("dd"); dd.textContent = String(value);
    dl.append(dt, dd);
  }
  function render(img) {
    document.getElementById("dlg-title").textContent = "Image " + img.id + " · " + img.setting + " · sample " + img.sample_index;
    const pic = document.getElementById("dlg-img");
    pic.src = img.thumb || "data:,"; pic.alt = img.synthetic ? "Synthetic placeholder image: " + img.prompt : "Generated for: " + img.prompt;
    document.getElementById("dlg-full").href = img.url || "#";
    document.getElementById("dlg-synthetic").hidden = !img.synthetic;
    const dl = document.getElementById("dlg-fields"); dl.replaceChildren();
    field(dl, "Prompt", img.prompt); field(dl, "Prompt key", img.prompt_key); field(dl, "Seed", img.seed);
    field(dl, "Status", img.status); field(dl, "Error", img.error); field(dl, "Backend", img.backend);
    field(dl, "Model", img.model); field(dl, "Revision", img.revision);
    field(dl, "Size", img.width ? img.width + " × " + img.height : ""); field(dl, "Wall time (s)", img.wall_time_s);
    field(dl, "Revised prompt", img.revised_prompt); field(dl, "SHA-256", img.sha256); field(dl, "Finished", img.finished_at);
    document.getElementById("dlg-json").textContent = JSON.stringify(
      {params: img.params, metadata: img.metadata, attempts: img.attempts, synthetic: img.synthetic}, null, 2);
    if (form) {
      const ex = document.getElementById("dlg-excluded");
      ex.hidden = !img.excluded; ex.textContent = img.excluded ? "Excluded: " + (img.exclusion_reason || "no reason") : "";
      document.getElementById("exclude-btn").hidden = img.excluded;
      document.getElementById("exclude-reason").parentElement.hidden = img.excluded;
      document.getElementById("include-btn").hidden = !img.excluded;
      document.getElementById("dlg-error").hidden = true;
      document.getElementById("exclude-reason").value = "";
    }
  }
  function open(id, trigger) {
    current = images[id]; opener = trigger;
    if (!current) return;
    render(current);
    dialog.showModal();
    const reason = document.getElementById("exclude-reason");
    if (reason && !current.excluded) reason.focus();
  }
  dialog.addEventListener("close", function () { if (opener) opener.focus(); });
  document.querySelectorAll("[data-open]").forEach(function (b) {
    b.addEventListener("click", function () { open(b.dataset.open, b); });
  });
  function update(img) {
    images[img.id] = Object.assign(current, {excluded: img.excluded, exclusion_reason: img.exclusion_reason});
    const tile = document.getElementById("tile-" + img.id);
    tile.classList.toggle("is-excluded", img.excluded);
    tile.querySelector("[data-excluded-badge]").hidden = !img.excluded;
    render(images[img.id]);
  }
  function showError(r) {
    const el = document.getElementById("dlg-error");
    const errs = (r.data && r.data.errors) || {};
    const parts = Object.keys(errs).map(function (k) { return k + ": " + errs[k].join(" "); });
    el.textContent = (r.data && r.data.detail ? r.data.detail : "Request failed (" + r.status + ")") + (parts.length ? " — " + parts.join("; ") : "");
    el.hidden = false;
  }
  if (form) {
    form.addEventListener("submit", async function (ev) {
      ev.preventDefault();
      const reason = document.getElementById("exclude-reason").value.trim();
      if (!reason) {
        showError({status: 400, data: {detail: "Give a reason.", errors: {reason: ["This field is required."]}}});
        document.getElementById("exclude-reason").focus();
        return;
      }
      const r = await window.Console.api("POST", "/api/images/" + current.id + "/exclude/", {reason: reason});
      if (r.ok) update(r.data); else showError(r);
    });
    document.getElementById("include-btn").addEventListener("click", async function () {
      const r = await window.Console.api("POST", "/api/images/" + current.id + "/include/");
      if (r.ok) update(r.data); else showError(r);
    });
  }
});
