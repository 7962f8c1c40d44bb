/* New campaign: presets fill the form, the form writes the spec (JSON) into the raw editor, and a
   debounced POST /api/specs/preview/ shows the counts, examples, questions, answers and cost it
   implies, or the validator's errors by dotted path next to the fields. */
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const $ = function (id) { return document.getElementById(id); };
  const form = $("campaign-form");
  const raw = $("spec");
  let catalogue = null;
  let rawEdited = raw.value.trim() !== "";   // a spec sent back after a failed create stays as it is
  let timer = null;
  let seq = 0;
  const defaults = JSON.parse($("annotation-defaults").textContent);

  const lines = function (text) { return text.split("\n").map(function (s) { return s.trim(); }).filter(Boolean); };
  const named = function (text) {
    return lines(text).map(function (l) {
      const i = l.indexOf("|");
      return i < 0 ? {name: l, phrase: l} : {name: l.slice(0, i).trim(), phrase: l.slice(i + 1).trim()};
    });
  };
  const unnamed = function (items) {
    return (items || []).map(function (x) { return typeof x === "string" ? x : (x.name === x.phrase || !x.phrase ? x.name : x.name + "|" + x.phrase); }).join("\n");
  };
  const checked = function (cls) {
    return Array.from(document.querySelectorAll("." + cls)).filter(function (c) { return c.checked; }).map(function (c) { return c.value; });
  };
  const num = function (id) { const v = $(id).value.trim(); return v === "" ? null : Number(v); };

  function kind() { return $("b-kind").value; }

  function showKind() {
    document.querySelectorAll("fieldset[data-kind]").forEach(function (fs) { fs.hidden = fs.dataset.kind !== kind(); });
    const aspect = $("b-aspect").value;
    document.querySelectorAll("[data-aspect]").forEach(function (el) { el.hidden = el.dataset.aspect !== aspect; });
    $("custom-groups").hidden = !$("b-custom-groups").checked;
    document.querySelectorAll(".pst-only").forEach(function (el) { el.hidden = kind() !== "pst"; });
    document.querySelectorAll(".gep-only").forEach(function (el) { el.hidden = kind() !== "gep"; });
    const other = kind() === "pst" ? "gep" : "pst", intro = $("b-instructions");
    if (intro.value.trim() === defaults.instructions[other]) intro.value = defaults.instructions[kind()];
    const notes = {
      placeholder: "placeholder: CPU-only synthetic images (neutral drawn figures that never show the prompt's words), marked synthetic everywhere.",
      diffusers: "diffusers: a Stable Diffusion model on the GPU workers; model is required (hub id or local path).",
      openai: "openai: the OpenAI images API (key from OPENAI_API_KEY on the workers).",
      import: "import: images generated elsewhere, uploaded with a manifest after creating the campaign.",
    };
    $("backend-note").textContent = notes[$("b-backend").value] || "";
  }

  function buildSpec() {
    const spec = {name: $("b-name").value.trim(), kind: kind(), seed: num("b-seed") === null ? 0 : num("b-seed")};
    if ($("b-description").value.trim()) spec.description = $("b-description").value.trim();
    const design = {};
    if (kind() === "pst") {
      design.aspect = $("b-aspect").value;
      const settings = checked("pst-setting");
      design.settings = settings.filter(function (s) { return s !== "intervention"; });
      if (settings.indexOf("intervention") >= 0) design.fairness_intervention = true;
      design.samples = {};
      settings.forEach(function (s) { design.samples[s] = num("b-samples-" + s); });
      if (design.aspect === "occupation" && $("b-custom-groups").checked) {
        design.identities = {groups: [1, 2].map(function (n) {
          return {name: $("b-g" + n + "-name").value.trim(), stereotype: $("b-g" + n + "-stereo").value.trim(),
                  identities: lines($("b-g" + n + "-ids").value)};
        })};
      }
      const templates = {};
      settings.forEach(function (s) {
        const v = $("b-t-" + s).value.trim();
        if (v && (!catalogue || v !== catalogue.pst.templates[s])) templates[s] = v;
      });
      if (Object.keys(templates).length) design.templates = templates;
    } else {
      design.settings = checked("gep-setting");
      design.samples = num("b-gep-samples");
      const g = catalogue ? catalogue.gep : null;
      const genders = $("b-genders").value, attributes = $("b-attributes").value, contexts = $("b-contexts").value;
      if (!g || genders.trim() !== unnamed(g.genders)) design.genders = named(genders);
      if (!g || attributes.trim() !== unnamed(g.attributes)) design.attributes = named(attributes);
      if (!g || contexts.trim() !== unnamed(g.contexts)) design.contexts = lines(contexts);
      const templates = {};
      design.settings.forEach(function (s) {
        const v = $("b-t-" + s).value.trim();
        if (v && (!g || v !== g.templates[s])) templates[s] = v;
      });
      if (Object.keys(templates).length) design.templates = templates;
    }
    spec.design = design;
    let params = {};
    try { params = JSON.parse($("b-params").value || "{}"); } catch (e) { params = {__invalid_json__: $("b-params").value}; }
    spec.backend = Object.assign({name: $("b-backend").value}, params);
    if ($("b-model").value.trim()) spec.backend.model = $("b-model").value.trim();
    const annotation = {redundancy: num("b-redundancy"), reward: $("b-reward").value.trim() || "0.00",
                        reward_per: $("b-reward-per").value};
    if (num("b-hit-size") !== null) annotation.hit_size = num("b-hit-size");
    // Instructions: written only when they differ from the kind's defaults (the spec stays short).
    const intro = $("b-instructions").value.trim();
    if (intro && intro !== defaults.instructions[kind()]) annotation.instructions = intro;
    if (kind() === "pst") {
      const d = defaults.setting_instructions.pst;
      const single = $("b-si-single").value.trim() || d.single, paired = $("b-si-paired").value.trim() || d.paired;
      // An intervention image is shown as a paired one: the same text, so the setting stays hidden.
      if (single !== d.single || paired !== d.paired) {
        annotation.setting_instructions = {single: single, paired: paired, intervention: paired};
      }
    }
    spec.annotation = annotation;
    return spec;
  }

  // ---- task page preview: what an annotator sees for an image of the chosen setting ----------
  function taskPreview() {
    const k = kind(), setting = k === "pst" ? $("tp-setting").value : "neutral";
    const intro = $("b-instructions").value.trim() || defaults.instructions[k];
    let settingText = "";
    const questions = [];
    let people = 1;
    if (k === "pst") {
      const d = defaults.setting_instructions.pst;
      const shown = setting === "single" ? "single" : "paired";   // intervention is shown as paired
      settingText = $("b-si-" + shown).value.trim() || d[shown];
      const ids = ($("b-custom-groups").checked ? [lines($("b-g1-ids").value)[0], lines($("b-g2-ids").value)[0]]
        : (catalogue ? catalogue.pst.occupation.groups.map(function (g) { return g.identities[0]; }) : []))
        .map(function (x) { return x || "person"; });
      const q = defaults.questions;
      if (shown === "single") questions.push(q.single.replace("{identity}", ids[0] || "person"));
      else {
        people = 2;
        questions.push(q.left.replace("{identity}", ids[0] || "person"), q.right.replace("{identity}", ids[1] || "person"));
      }
    } else {
      const attrs = named($("b-attributes").value);
      const a = attrs[0] || {phrase: "wearing boots"};
      questions.push(defaults.questions.attribute.replace("{phrase}", a.phrase));
    }
    $("tp-instructions").textContent = intro;
    $("tp-setting-text").textContent = settingText;
    $("tp-setting-text").hidden = !settingText;
    const ol = $("tp-questions");
    ol.replaceChildren();
    questions.forEach(function (text) {
      const li = document.createElement("li");
      li.textContent = text + " ";
      const choices = document.createElement("span");
      choices.className = "muted";
      choices.textContent = k === "pst" ? "Feminine · Masculine · Cannot identify" : "Yes · No";
      li.append(choices); ol.append(li);
    });
    const img = $("tp-image");
    img.replaceChildren();
    for (let i = 0; i < people; i++) { const f = document.createElement("span"); f.className = "tp-figure"; img.append(f); }
    $("tp-note").textContent = k === "pst" && setting === "intervention"
      ? "An intervention image gets the two-person text and the paired examples: the page never says which setting it is."
      : "The examples of the question's family are one tap away on the task page.";
  }

  function writeSpec() {
    taskPreview();
    if (rawEdited) return;
    raw.value = JSON.stringify(buildSpec(), null, 2);
    schedulePreview();
  }

  function applyPreset(name) {
    if (!catalogue) return;
    const pst = catalogue.pst, gep = catalogue.gep;
    const groups = pst.occupation.groups;
    [1, 2].forEach(function (n) {
      const grp = groups[n - 1];
      $("b-g" + n + "-name").value = name === "scratch" ? ["group-a", "group-b"][n - 1] : grp.name;
      $("b-g" + n + "-stereo").value = grp.stereotype;
      $("b-g" + n + "-ids").value = name === "scratch" ? "" : grp.identities.join("\n");
    });
    ["single", "paired", "intervention"].forEach(function (s) { $("b-t-" + s).value = pst.templates[s]; });
    ["neutral", "explicit"].forEach(function (s) { $("b-t-" + s).value = gep.templates[s]; });
    $("b-instructions").value = defaults.instructions[name === "gep" ? "gep" : "pst"];
    $("b-si-single").value = defaults.setting_instructions.pst.single;
    $("b-si-paired").value = defaults.setting_instructions.pst.paired;
    $("b-genders").value = unnamed(gep.genders);
    $("b-attributes").value = unnamed(gep.attributes);
    $("b-contexts").value = unnamed(gep.contexts);
    $("b-gep-samples").value = gep.samples;
    document.querySelectorAll(".gep-setting").forEach(function (c) { c.checked = true; });
    if (name === "gep") {
      $("b-kind").value = "gep";
      $("b-name").value = "gep-audit";
    } else {
      $("b-kind").value = "pst";
      const aspect = name === "pst-power" ? "power" : "occupation";
      $("b-aspect").value = aspect;
      $("b-custom-groups").checked = name === "scratch";
      document.querySelectorAll(".pst-setting").forEach(function (c) { c.checked = c.value !== "intervention"; });
      const samples = pst.samples[aspect];
      $("b-samples-single").value = samples.single; $("b-samples-paired").value = samples.paired;
      $("b-samples-intervention").value = samples.paired;
      $("b-name").value = name === "scratch" ? "" : name + "-audit";
    }
    showKind();
    rawEdited = false; $("raw-note").hidden = true;
    writeSpec();
  }

  // ---- preview -----------------------------------------------------------------------------
  function schedulePreview() {
    window.clearTimeout(timer);
    timer = window.setTimeout(preview, 400);
  }
  function clearFieldErrors() {
    document.querySelectorAll(".field-error").forEach(function (el) { el.remove(); });
    document.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); });
  }
  function fieldFor(path) {
    // The element whose data-path is the longest prefix of the error's dotted path.
    let best = null, bestLen = -1;
    document.querySelectorAll("#builder [data-path]").forEach(function (el) {
      const p = el.dataset.path;
      if ((path === p || path.indexOf(p + ".") === 0) && p.length > bestLen && !el.closest("[hidden]")) { best = el; bestLen = p.length; }
    });
    return best;
  }
  function showErrors(errors, detail) {
    const box = $("preview-errors"), ul = box.querySelector("ul");
    ul.replaceChildren();
    clearFieldErrors();
    const paths = Object.keys(errors || {});
    if (!paths.length && detail) paths.push("");
    paths.forEach(function (path, i) {
      const msgs = path ? errors[path] : [detail];
      msgs.forEach(function (msg) {
        const li = document.createElement("li");
        if (path) { const c = document.createElement("code"); c.textContent = path; li.append(c, ": "); }
        li.append(msg);
        ul.append(li);
      });
      const el = path && !rawEdited ? fieldFor(path) : null;
      if (el) {
        const p = document.createElement("p");
        p.className = "field-error"; p.id = "err-" + i; p.textContent = path + ": " + msgs.join(" ");
        el.setAttribute("aria-invalid", "true");
        el.setAttribute("aria-describedby", p.id);
        (el.closest(".field") || el.parentElement).append(p);
      }
    });
    box.hidden = false;
  }
  function qpi(spec, setting) {
    if (spec.kind === "pst") return setting === "single" ? 1 : 2;
    return setting === "neutral" ? (spec.design.attributes || []).length : 1;
  }
  // Planned precision (the preview's `planning`, docs/metrics.md "Sample size planning").
  function fmt(v, kind) {
    if (v === null || v === undefined) return "–";
    return kind === "pst" ? v.toFixed(1) : v.toFixed(3);
  }
  function showPlanning(p) {
    const tbody = $("pv-planning-table").querySelector("tbody");
    tbody.replaceChildren();
    if (!p) { $("pv-halfwidth").textContent = "–"; $("pv-planning-note").textContent = ""; return; }
    const kind = p.pst ? "pst" : "gep", block = p[kind], a = p.assumption;
    $("pv-halfwidth").textContent = block.half_width === null ? "–"
      : "± " + fmt(block.half_width, kind) + (kind === "pst" ? " STS points" : " GEP") + " (" + block.headline_setting + ")";
    $("pv-planning-note").textContent = "Assuming " + (kind === "pst"
      ? "annotator agreement kappa " + a.kappa + " (" + a.kappa_source + "), true STS " + a.true_sts
      : "annotator agreement alpha " + a.alpha + " (" + a.alpha_source + ")") + ", R = " + a.redundancy + ".";
    Object.keys(block.by_setting).forEach(function (s) {
      const row = block.by_setting[s], tr = document.createElement("tr");
      const need = p.images_for_target ? p.images_for_target[s] : null;
      [s, row.images, fmt(row.half_width, kind), need === null || need === undefined ? "–" : need].forEach(function (v, i) {
        const td = document.createElement(i ? "td" : "th");
        if (!i) td.scope = "row"; else td.className = "num";
        td.textContent = v; tr.append(td);
      });
      tbody.append(tr);
    });
  }
  async function preview() {
    const text = raw.value.trim();
    if (!text) { $("preview-state").textContent = "Waiting for a spec…"; return; }
    let contentType = "application/json";
    try { JSON.parse(text); } catch (e) { contentType = "application/yaml"; }
    const mine = ++seq;
    $("preview-state").textContent = "Checking…";
    let r;
    const target = ($("pv-target").value || "").trim();
    const url = "/api/specs/preview/" + (target ? "?target_half_width=" + encodeURIComponent(target) : "");
    try { r = await window.Console.api("POST", url, text, contentType); }
    catch (e) { $("preview-state").textContent = "Preview unavailable (network)."; return; }
    if (mine !== seq) return;  // a newer preview is on its way
    const ids = ["pv-prompts", "pv-images", "pv-questions", "pv-answers", "pv-cost"];
    if (!r.ok) {
      $("preview-state").textContent = "The spec has problems: nothing can be created yet.";
      ids.forEach(function (id) { $(id).textContent = "–"; });
      $("pv-settings").querySelector("tbody").replaceChildren();
      $("pv-examples").replaceChildren();
      $("pv-cost-note").textContent = "";
      showPlanning(null);
      showErrors((r.data && r.data.errors) || {}, (r.data && r.data.detail) || ("HTTP " + r.status));
      return;
    }
    clearFieldErrors();
    $("preview-errors").hidden = true;
    const d = r.data, spec = d.spec, ann = spec.annotation || {};
    // annotation.redundancy: a fixed R, or the adaptive object {min, max, ...}: its max bounds the cost.
    const red = ann.redundancy, adaptive = red !== null && typeof red === "object";
    const R = adaptive ? Number(red.max || 1) : Number(red || 1), reward = Number(ann.reward || 0), per = ann.reward_per || "hit";
    const hit = Number(ann.hit_size || 1);
    let questions = 0, units = 0;
    const tbody = $("pv-settings").querySelector("tbody");
    tbody.replaceChildren();
    Object.keys(d.by_setting).forEach(function (s) {
      const row = d.by_setting[s], q = row.images * qpi(spec, s);
      questions += q;
      units += spec.kind === "pst" ? row.images : q;   // PST HITs hold whole images, GEP HITs questions
      const tr = document.createElement("tr");
      [s, row.prompts, row.images, q].forEach(function (v, i) {
        const td = document.createElement(i ? "td" : "th");
        if (!i) td.scope = "row"; else td.className = "num";
        td.textContent = v; tr.append(td);
      });
      tbody.append(tr);
    });
    const answers = questions * R;
    const cost = per === "question" ? answers * reward : Math.ceil(units * R / hit) * reward;
    $("pv-prompts").textContent = d.prompt_count.toLocaleString("en-US");
    $("pv-images").textContent = d.images_planned.toLocaleString("en-US");
    $("pv-questions").textContent = questions.toLocaleString("en-US");
    $("pv-answers").textContent = answers.toLocaleString("en-US");
    $("pv-cost").textContent = cost.toFixed(2) + " " + (ann.currency || "USD");
    $("pv-cost-note").textContent = (adaptive ? "upper bound (adaptive redundancy, " + red.min + " to " + red.max + " answers per question): " : "") + (per === "question"
      ? "answers × reward (" + answers + " × " + reward.toFixed(2) + ")"
      : "HITs × reward: " + Math.ceil(units * R / hit) + " HITs of " + hit + (spec.kind === "pst" ? " images" : " questions") + " × " + reward.toFixed(2));
    showPlanning(d.planning || null);
    const ex = $("pv-examples");
    ex.replaceChildren();
    d.examples.forEach(function (e) {
      const li = document.createElement("li");
      const tag = document.createElement("span"); tag.className = "badge"; tag.textContent = e.setting;
      li.append(tag, " ", e.text); ex.append(li);
    });
    $("preview-state").textContent = "Valid spec: " + d.prompt_count + " prompts, " + d.images_planned + " images.";
  }

  // ---- wiring ------------------------------------------------------------------------------
  $("builder").addEventListener("input", function () { showKind(); writeSpec(); });
  $("builder").addEventListener("change", function () { showKind(); writeSpec(); });
  $("pv-target").addEventListener("input", schedulePreview);
  $("tp-setting").addEventListener("change", taskPreview);
  raw.addEventListener("input", function () { rawEdited = true; $("raw-note").hidden = false; schedulePreview(); });
  $("rebuild").addEventListener("click", function () { rawEdited = false; $("raw-note").hidden = true; writeSpec(); });
  document.querySelectorAll("input[name=preset]").forEach(function (r) {
    r.addEventListener("change", function () { if (r.checked) applyPreset(r.value); });
  });
  $("spec-file").addEventListener("change", function () {
    const file = $("spec-file").files[0];
    if (!file) return;
    const reader = new FileReader();
    reader.onload = function () {
      raw.value = reader.result; rawEdited = true; $("raw-note").hidden = false;
      $("spec-file").value = "";  // the editor now holds the file: what is posted is what was previewed
      schedulePreview();
    };
    reader.readAsText(file);
  });
  // A rejected create comes back with the posted spec in the editor: the form's own values are kept
  // in this tab's sessionStorage at submit and put back, so nothing is lost and the form still writes
  // the spec (the "you edited the spec" note only shows when the spec was really edited by hand).
  const SAVED = "t2i-console-new-form";
  function formState() {
    const fields = {};
    document.querySelectorAll("#builder input[id], #builder select[id], #builder textarea[id], input[name=preset]").forEach(function (el) {
      fields[el.id] = (el.type === "checkbox" || el.type === "radio") ? el.checked : el.value;
    });
    return {fields: fields, raw: raw.value, rawEdited: rawEdited};
  }
  function restoreState() {
    let saved = null;
    try { saved = JSON.parse(window.sessionStorage.getItem(SAVED) || "null"); } catch (e) { saved = null; }
    if (!saved || !saved.fields || saved.raw.trim() !== raw.value.trim()) return false;
    Object.keys(saved.fields).forEach(function (id) {
      const el = $(id);
      if (!el) return;
      if (el.type === "checkbox" || el.type === "radio") { el.checked = saved.fields[id]; } else { el.value = saved.fields[id]; }
    });
    rawEdited = !!saved.rawEdited;
    $("raw-note").hidden = !rawEdited;
    showKind();
    taskPreview();
    schedulePreview();
    return true;
  }
  form.addEventListener("submit", function () {
    try { window.sessionStorage.setItem(SAVED, JSON.stringify(formState())); } catch (e) { /* private mode */ }
    $("create").disabled = true; window.setTimeout(function () { $("create").disabled = false; }, 5000);
  });

  window.Console.api("GET", "/api/presets/").then(function (r) {
    if (!r.ok) return;
    catalogue = r.data;
    if (rawEdited && restoreState()) return;
    if (rawEdited) { $("raw-note").hidden = false; showKind(); schedulePreview(); return; }
    const chosen = document.querySelector("input[name=preset]:checked");
    applyPreset(chosen ? chosen.value : "pst-occupation");
  });
  showKind();
});
