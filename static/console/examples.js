/* Image review: mark the image in the dialog as an example of the annotators' instructions, with its
   correct answer and an optional caption (POST /api/campaigns/{id}/examples/), or remove it again
   (DELETE /api/campaigns/{id}/examples/{eid}/). The family is preset from the image: a PST image's
   setting ("person:paired"), a GEP image's attribute ("attribute:dress"); neutral GEP images ask
   about every attribute, so the researcher picks one. */
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const setupEl = document.getElementById("example-setup");
  const form = document.getElementById("example-form");
  const dataEl = document.getElementById("image-data");
  if (!setupEl || !form || !dataEl) return;
  const setup = JSON.parse(setupEl.textContent);
  const images = JSON.parse(dataEl.textContent);
  const family = document.getElementById("example-family");
  const answer = document.getElementById("example-answer");
  const caption = document.getElementById("example-caption");
  const errorEl = document.getElementById("example-error");
  const base = "/api/campaigns/" + setup.campaign + "/examples/";
  let current = null;

  function option(select, value) {
    const o = document.createElement("option"); o.value = value; o.textContent = value; select.append(o);
  }
  function familyOf(img) {
    if (setup.kind === "pst") return "person:" + img.setting;
    const attribute = img.metadata && img.metadata.attribute;
    return attribute ? "attribute:" + attribute : "";
  }
  function fillAnswers() {
    answer.replaceChildren();
    (setup.choices[family.value] || []).forEach(function (c) { option(answer, c); });
  }
  function badges() {
    document.querySelectorAll("[data-example-badge]").forEach(function (b) {
      const id = b.closest("[data-image]").dataset.image;
      b.hidden = !(setup.by_image[id] || []).length;
    });
  }
  function render() {
    const mine = setup.by_image[String(current.id)] || [];
    const list = document.getElementById("example-list"); list.replaceChildren();
    mine.forEach(function (e) {
      const li = document.createElement("li");
      li.textContent = "Example of " + e.family + ": " + e.answer + (e.caption ? " (" + e.caption + ")" : "") + " ";
      const remove = document.createElement("button");
      remove.type = "button"; remove.className = "linklike"; remove.textContent = "Remove";
      remove.dataset.example = String(e.id);
      remove.addEventListener("click", async function () {
        const r = await window.Console.api("DELETE", base + e.id + "/");
        if (r.ok || r.status === 204) {
          setup.by_image[String(current.id)] = mine.filter(function (x) { return x.id !== e.id; });
          badges(); render();
        } else showError(r);
      });
      li.append(remove);
      list.append(li);
    });
    family.replaceChildren();
    setup.families.forEach(function (f) { option(family, f); });
    const preset = familyOf(current);
    if (preset && setup.families.indexOf(preset) !== -1) family.value = preset;
    fillAnswers();
    caption.value = "";
    errorEl.hidden = true;
    form.hidden = current.status !== "done";
  }
  function showError(r) {
    const errs = (r.data && r.data.errors) || {};
    const parts = Object.keys(errs).map(function (k) { return k + ": " + errs[k].join(" "); });
    errorEl.textContent = (r.data && r.data.detail ? r.data.detail : "Request failed (" + r.status + ")") + (parts.length ? " — " + parts.join("; ") : "");
    errorEl.hidden = false;
  }
  family.addEventListener("change", fillAnswers);
  document.querySelectorAll("[data-open]").forEach(function (b) {
    b.addEventListener("click", function () { current = images[b.dataset.open]; if (current) render(); });
  });
  form.addEventListener("submit", async function (ev) {
    ev.preventDefault();
    const r = await window.Console.api("POST", base, {image: current.id, family: family.value, answer: answer.value,
                                                      caption: caption.value.trim()});
    if (!r.ok) { showError(r); return; }
    const key = String(current.id);
    setup.by_image[key] = (setup.by_image[key] || []).concat([{id: r.data.id, family: r.data.family, answer: r.data.answer,
                                                                caption: r.data.caption}]);
    badges(); render();
  });
  badges();
});
