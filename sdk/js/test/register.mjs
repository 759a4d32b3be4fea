import { register } from "node:module";

register("./host-hooks.mjs", import.meta.url);
