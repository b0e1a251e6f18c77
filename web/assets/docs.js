/* docs.js: starts the API reference on /docs. RapiDoc (vendored under vendor/rapidoc-9.3.8/)
   renders /v1/openapi.json. This points it at this origin, for the document and as the server
   the reference names (the page's CSP allows no other origin), and picks the layout: on wide screens "focused" (a navigation listing every operation and every
   schema, one shown at a time), on phones "read" (RapiDoc hides its navigation there, so every
   operation is shown on one scrolling page). */

const reference = document.getElementById('reference');
const wide = window.matchMedia('(min-width: 769px)').matches;
reference.setAttribute('render-style', wide ? 'focused' : 'read');
reference.setAttribute('server-url', window.location.origin);
reference.setAttribute('default-api-server', window.location.origin);
reference.setAttribute('spec-url', '/v1/openapi.json');
