// compare.js: the comparison view (/compare).
