/* Glue between RequireJS, MathJax 3 and @jupyter-widgets/html-manager's embed-amd.js, so the
 * saved widgets of a chapter render from the book's own files, also from file:// (issue 9).
 * Loaded by every page with widget state, after require.js and before embed-amd.js
 * (_config.yml: nb_ipywidgets_js); copied to _static/html-manager/ by .ci/offline_assets.py.
 */
(function () {
  "use strict";
  // 1. embed-amd.js derives its asset URL (the Font Awesome fonts next to it) from the AMD module
  //    id "@jupyter-widgets/html-manager/dist/...", which RequireJS resolves against the page's
  //    folder. Map that id to the folder this script was loaded from.
  var here = document.currentScript && document.currentScript.src;
  if (here && window.require && window.require.config) {
    var dist = here.replace(/[?#].*$/, "").replace(/[^\/]*$/, "") + "dist";
    window.require.config({ paths: { "@jupyter-widgets/html-manager/dist": dist } });
  }
  // 2. @jupyter-widgets/controls typesets labels with the MathJax 2 API (MathJax.Hub.Queue); the
  //    book uses MathJax 3. Give it a Hub.Queue that calls MathJax 3's typesetPromise.
  if (window.MathJax === undefined) { return; }
  var pending = [];
  function typeset(element) {
    var mj = window.MathJax;
    if (mj && mj.typesetPromise && mj.startup && mj.startup.promise) {
      mj.startup.promise.then(function () { return mj.typesetPromise([element]); })
        .catch(function (err) { console.warn("MathJax could not typeset a widget label", err); });
    } else {
      pending.push(element);
    }
  }
  function queue() {
    for (var i = 0; i < arguments.length; i++) {
      var job = arguments[i];
      if (Array.isArray(job) && job[0] === "Typeset" && job[2]) { typeset(job[2]); }
    }
  }
  var config = window.MathJax;
  config.Hub = { Queue: queue };  // what widgets see before MathJax 3 has loaded
  if (!config.version) {          // still the configuration object: hook MathJax 3's start-up
    config.startup = config.startup || {};
    var ready = config.startup.ready;
    config.startup.ready = function () {
      if (ready) { ready(); } else { window.MathJax.startup.defaultReady(); }
      window.MathJax.Hub = { Queue: queue };
      pending.splice(0).forEach(typeset);
    };
  }
})();
