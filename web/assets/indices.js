// indices.js: the indices page (/indices).
