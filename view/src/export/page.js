"use strict";
(function () {
  var calls = document.querySelectorAll("details.call");
  function all(open) {
    for (var i = 0; i < calls.length; i++) { calls[i].open = open; }
  }
  document.getElementById("open-all").addEventListener("click", function () { all(true); });
  document.getElementById("fold-all").addEventListener("click", function () { all(false); });
  document.documentElement.setAttribute("data-calls", String(calls.length));
})();
