import { register } from "node:module";

register("./caller-hooks.mjs", import.meta.url);
