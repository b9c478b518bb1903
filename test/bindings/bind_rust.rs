// h5mem from Rust through rusqlite (Debian's crates, feature load_extension,
// on the system libsqlite3): runs a plan of test_bindings.py.
//   bind_rust PLAN STORE EXT
use rusqlite::types::{Value, ValueRef};
use rusqlite::{params_from_iter, Connection};
use std::io::Write;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn connect(ext: &str) -> Res<Connection> {
    let db = Connection::open_in_memory()?;
    unsafe {
        db.load_extension_enable()?;
        db.load_extension(ext, None)?;
    }
    db.load_extension_disable()?;
    Ok(db)
}

fn param(p: &str) -> Res<Value> {
    let (kind, val) = p.split_once(':').ok_or("bad parameter")?;
    Ok(match kind {
        "i" => Value::Integer(val.parse()?),
        "r" => Value::Real(val.parse()?),
        "t" => Value::Text(val.to_string()),
        "v" => {
            let mut b = Vec::new();
            for x in val.split(',') {
                b.extend_from_slice(&x.parse::<f32>()?.to_le_bytes());
            }
            Value::Blob(b)
        }
        _ => Value::Null,
    })
}

// C's %.5e: at least two exponent digits, with a sign
fn sci(x: f64) -> String {
    let s = format!("{:.5e}", x + 0.0);
    let (m, e) = s.split_once('e').unwrap();
    let e: i32 = e.parse().unwrap();
    format!("{}e{}{:02}", m, if e < 0 { '-' } else { '+' }, e.abs())
}

fn fmt(c: u8, v: ValueRef) -> String {
    match (c, v) {
        (_, ValueRef::Null) => "NULL".into(),
        (b'f', ValueRef::Real(x)) => sci(x),
        (b'f', ValueRef::Integer(n)) => sci(n as f64),
        (_, ValueRef::Integer(n)) => n.to_string(),
        (_, ValueRef::Real(x)) => x.to_string(),
        (_, ValueRef::Text(t)) => String::from_utf8_lossy(t).into_owned(),
        (_, ValueRef::Blob(b)) => b.iter().map(|x| format!("{:02x}", x)).collect(),
    }
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let (plan, store, ext) = (&args[1], &args[2], &args[3]);
    let mut db = connect(ext)?;
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for line in std::fs::read_to_string(plan)?.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f[0] == "reopen" {
            db.close().map_err(|(_, e)| e)?;
            db = connect(ext)?;
            continue;
        }
        let params = f[4..].iter().map(|p| param(p)).collect::<Res<Vec<Value>>>()?;
        let mut st = db.prepare(&f[3].replace("@STORE@", store))?;
        let n = st.column_count();
        let mut rows = st.query(params_from_iter(params))?;
        if f[0] == "query" {
            writeln!(out, "== {}", f[1])?;
        }
        while let Some(r) = rows.next()? {
            if f[0] == "query" {
                let row: Vec<String> = (0..n).map(|i| fmt(f[2].as_bytes()[i], r.get_ref_unwrap(i))).collect();
                writeln!(out, "{}", row.join("\t"))?;
            }
        }
    }
    db.close().map_err(|(_, e)| e)?;
    out.flush()?;
    Ok(())
}
