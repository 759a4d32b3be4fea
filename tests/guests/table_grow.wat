;; Hostile test fixture `table_grow`: a core module of the `airlock:tool`
;; world whose `call` grows its funcref table 1000 elements at a time until
;; growth fails, then traps. Rust on stable cannot emit `table.grow`, hence WAT.
(module
  (table $t 1 funcref)
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))

  (data (i32.const 16) "table_grow")
  (data (i32.const 32) "Hostile test fixture: grows its function table until the host stops it.")
  (data (i32.const 128) "{\"type\":\"object\"}")

  ;; Bump allocator: enough for the host to pass the arguments string.
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $ptr i32) (local $end i32) (local $size i32)
    (local.set $ptr
      (i32.and (i32.add (global.get $heap) (i32.sub (local.get 2) (i32.const 1)))
               (i32.sub (i32.const 0) (local.get 2))))
    (local.set $end (i32.add (local.get $ptr) (local.get 3)))
    (local.set $size (i32.mul (memory.size) (i32.const 65536)))
    (if (i32.gt_u (local.get $end) (local.get $size))
      (then
        (if (i32.eq
              (memory.grow (i32.shr_u (i32.add (i32.sub (local.get $end) (local.get $size))
                                               (i32.const 65535))
                                      (i32.const 16)))
              (i32.const -1))
          (then unreachable))))
    (global.set $heap (local.get $end))
    (local.get $ptr))

  ;; A string result is returned through a (ptr, len) pair at address 512.
  (func $string (param $ptr i32) (param $len i32) (result i32)
    (i32.store (i32.const 512) (local.get $ptr))
    (i32.store (i32.const 516) (local.get $len))
    (i32.const 512))

  (func (export "airlock:tool/metadata@0.1.0#name") (result i32)
    (call $string (i32.const 16) (i32.const 10)))
  (func (export "airlock:tool/metadata@0.1.0#description") (result i32)
    (call $string (i32.const 32) (i32.const 71)))
  (func (export "airlock:tool/metadata@0.1.0#parameters") (result i32)
    (call $string (i32.const 128) (i32.const 17)))
  ;; `option<string>`: discriminant 0 = none.
  (func (export "airlock:tool/metadata@0.1.0#output") (result i32)
    (i32.store8 (i32.const 512) (i32.const 0))
    (i32.const 512))

  ;; Grow until `table.grow` returns -1 (or the host traps the growth).
  (func (export "airlock:tool/handler@0.1.0#call") (param i32 i32) (result i32)
    (loop $grow
      (br_if $grow
        (i32.ne (table.grow $t (ref.null func) (i32.const 1000)) (i32.const -1))))
    unreachable)
)
