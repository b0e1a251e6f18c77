// site.js: what every page of the site needs from a script, and nothing else.
// Addresses written as this server's own (`data-origin`) become the origin the page was loaded
// from, so a quickstart works whatever host and port the server is reached at; without
// scripts the placeholder text stays and says what to put there.
for (const node of document.querySelectorAll('[data-origin]')) {
  node.textContent = window.location.origin;
}
