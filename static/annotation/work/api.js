/* The public API as the work page calls it: JSON in and out, the CSRF token for the session, the
 * annotator's token in MTurk mode (MTurk frames the page: third-party cookies may not be sent). */
import { cfg } from "./dom.js";

export function api(method, path, body) {
  const opts = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
  if (cfg.authToken) { opts.headers["Authorization"] = "Token " + cfg.authToken; }
  if (method !== "GET") { opts.headers["X-CSRFToken"] = cfg.csrf; }
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  return fetch(cfg.apiRoot + path, opts).then(function (resp) {
    if (resp.status === 204) {
      // Retry-After on a 204: nothing for now, more may come (adaptive redundancy); none: finished.
      const wait = parseInt(resp.headers.get("Retry-After") || "", 10);
      return { status: 204, data: null, retryAfter: wait > 0 ? wait : 0 };
    }
    return resp.json().then(
      function (data) { return { status: resp.status, data: data }; },
      function () { return { status: resp.status, data: null }; });
  }, function () {
    return { status: 0, data: { detail: "Could not reach the server. Check your connection and try again." } };
  });
}

/* Errors have the shape {"detail": "...", "errors": {"field": ["..."]}}. */
export function errorText(res) {
  const data = res.data || {};
  const text = data.detail || ("Something went wrong (HTTP " + res.status + ").");
  const errors = data.errors || {};
  const parts = Object.keys(errors).map(function (field) {
    const msgs = Array.isArray(errors[field]) ? errors[field].join(" ") : String(errors[field]);
    return field === "non_field_errors" ? msgs : field + ": " + msgs;
  });
  return parts.length ? text + " (" + parts.join("; ") + ")" : text;
}

/* Not logged in (or the session ended): to the login page. */
export function handleAuth(res) {
  if (res.status === 401 || (res.status === 403 && /credentials|authenticat/i.test((res.data || {}).detail || ""))) {
    window.location.href = cfg.loginUrl;
    return true;
  }
  return false;
}
