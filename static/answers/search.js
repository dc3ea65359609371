// The search page's streaming answer: a section.answer with data-stream-url (returned by the
// htmx form post) is filled from the answer's Server-Sent Events, each token appended as text
// (never parsed as HTML); when the stream ends ("done" or "error") the finished answer, with its
// citations and highlighted sources, replaces the section (GET data-answer-url through htmx).
(function () {
  "use strict";

  function message(container, text, link) {
    const p = document.createElement("p");
    p.className = "down";
    p.setAttribute("role", "alert");
    p.textContent = text;
    if (link) {
      const a = document.createElement("a");
      a.href = link;
      a.textContent = "open the answer page";
      p.append(" ", a);
    }
    container.appendChild(p);
  }

  function finish(section) {
    const url = section.dataset.answerUrl;
    if (window.htmx) {
      window.htmx.ajax("GET", url, { target: section, swap: "outerHTML" });
    } else {
      window.location.assign(url);
    }
  }

  // "Stop": ask the server to stop the generation; the stream then ends with what was written.
  function stopper(section) {
    const form = section.querySelector("form.stop");
    if (!form) return;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const button = form.querySelector("button");
      button.disabled = true;
      button.textContent = "Stopping…";
      fetch(form.action, { method: "POST", body: new FormData(form), headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : { state: "failed" }; })
        .then(function (data) {
          if (data.state === "finished") form.remove();
          if (data.state === "failed") { button.disabled = false; button.textContent = "Stop"; }
        })
        .catch(function () { button.disabled = false; button.textContent = "Stop"; });
    });
  }

  function start(section) {
    if (section.dataset.streaming) return;
    section.dataset.streaming = "on";
    stopper(section);
    const live = section.querySelector(".answer-live");
    const source = new EventSource(section.dataset.streamUrl);
    source.addEventListener("token", function (event) {
      const data = JSON.parse(event.data);
      live.appendChild(document.createTextNode(data.text));
    });
    source.addEventListener("generated", function (event) {
      const stop = section.querySelector("form.stop");
      if (stop) stop.remove(); // the text is final: nothing left to stop
      // The text is final: show it now (not-found included); citations and tints follow with "done".
      const data = JSON.parse(event.data);
      live.textContent = data.text;
      live.removeAttribute("aria-busy");
      const meta = section.querySelector(".generating");
      if (meta) meta.textContent = data.not_found ? "" : "Tracing each word to its sources…";
    });
    source.addEventListener("done", function () {
      source.close();
      finish(section);
    });
    source.addEventListener("error", function (event) {
      source.close();
      live.removeAttribute("aria-busy");
      if (event.data) {
        finish(section); // the answer page says what went wrong
      } else {
        message(section, "The connection to the answer stream was lost.", section.dataset.answerUrl);
      }
    });
  }

  function scan() {
    document.querySelectorAll("section.answer[data-stream-url]").forEach(start);
  }

  document.addEventListener("htmx:afterSettle", scan);
  document.addEventListener("htmx:responseError", function (event) {
    const results = document.getElementById("results");
    if (!results) return;
    results.replaceChildren();
    const status = event.detail.xhr ? event.detail.xhr.status : 0;
    message(
      results,
      status === 503
        ? "A service the search needs is not reachable right now (see Status). Please try again shortly."
        : "The search failed (HTTP " + status + "). Please try again."
    );
  });
  document.addEventListener("htmx:sendError", function () {
    const results = document.getElementById("results");
    if (!results) return;
    results.replaceChildren();
    message(results, "The server could not be reached. Please try again.");
  });
  // An example question (a link that pre-fills the form without JavaScript) is asked at once.
  document.addEventListener("click", function (event) {
    const link = event.target.closest && event.target.closest("a.example");
    const form = document.querySelector("form.ask-form");
    if (!link || !form || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    form.querySelector("[name=question]").value = link.textContent.trim();
    form.requestSubmit();
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", scan);
  } else {
    scan();
  }
})();
