#include "core/cli/flags.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/cli/number.h"

namespace ddp::cli {
namespace {

// Strict decimal parses (core/cli/number.h): "0x10" or " 5" is no number.
bool ParseInt64(const std::string& s, std::int64_t* out) { return ParseDecimalInt64(s, out); }
bool ParseDouble(const std::string& s, double* out) { return ParseDecimal(s, out); }

std::string Range(double min, double max) {
  std::ostringstream os;
  os << min << ".." << max;
  return os.str();
}

}  // namespace

Flags::Flags(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void Flags::Add(Flag f) { flags_.push_back(std::move(f)); }

Flags::Flag Flags::MakeFlag(const std::string& name, const std::string& help,
                            std::string allowed, std::string default_value) {
  Flag f;
  f.name = name;
  f.help = help;
  f.allowed = std::move(allowed);
  f.default_value = std::move(default_value);
  return f;
}

Flags::Flag* Flags::Find(const std::string& name) {
  for (Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool Flags::WasSet(const std::string& name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return f.set;
  }
  return false;
}

void Flags::Int64(const std::string& name, std::int64_t* target, const std::string& help,
                  std::int64_t min, std::int64_t max) {
  Flag f = MakeFlag(name, help, "an integer in " + std::to_string(min) + ".." + std::to_string(max),
         std::to_string(*target));
  f.parse = [target, min, max](const std::string& v) -> std::string {
    std::int64_t x = 0;
    if (!ParseInt64(v, &x) || x < min || x > max) return "bad value";
    *target = x;
    return "";
  };
  Add(std::move(f));
}

void Flags::Int(const std::string& name, int* target, const std::string& help, int min,
                int max) {
  Flag f = MakeFlag(name, help, "an integer in " + std::to_string(min) + ".." + std::to_string(max),
         std::to_string(*target));
  f.parse = [target, min, max](const std::string& v) -> std::string {
    std::int64_t x = 0;
    if (!ParseInt64(v, &x) || x < min || x > max) return "bad value";
    *target = static_cast<int>(x);
    return "";
  };
  Add(std::move(f));
}

void Flags::Double(const std::string& name, double* target, const std::string& help,
                   double min, double max) {
  std::ostringstream def;
  def << *target;
  Flag f = MakeFlag(name, help, "a number in " + Range(min, max), def.str());
  f.parse = [target, min, max](const std::string& v) -> std::string {
    double x = 0;
    if (!ParseDouble(v, &x) || !(x >= min && x <= max)) return "bad value";
    *target = x;
    return "";
  };
  Add(std::move(f));
}

void Flags::Bool(const std::string& name, bool* target, const std::string& help) {
  Flag f = MakeFlag(name, help, "true or false", *target ? "true" : "false");
  f.is_bool = true;
  f.parse = [target](const std::string& v) -> std::string {
    if (v == "true" || v == "1") {
      *target = true;
    } else if (v == "false" || v == "0") {
      *target = false;
    } else {
      return "bad value";
    }
    return "";
  };
  Add(std::move(f));
}

void Flags::String(const std::string& name, std::string* target, const std::string& help) {
  Flag f = MakeFlag(name, help, "a string", target->empty() ? "\"\"" : *target);
  f.parse = [target](const std::string& v) -> std::string {
    *target = v;
    return "";
  };
  Add(std::move(f));
}

void Flags::Path(const std::string& name, std::string* target, const std::string& help) {
  Flag f = MakeFlag(name, help, "a path (not empty)", target->empty() ? "none" : *target);
  f.parse = [target](const std::string& v) -> std::string {
    if (v.empty()) return "an empty path";
    *target = v;
    return "";
  };
  Add(std::move(f));
}

void Flags::Choice(const std::string& name, std::string* target, const std::string& help,
                   std::vector<std::string> allowed) {
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : "|") + a;
  Flag f = MakeFlag(name, help, "one of " + list, *target);
  f.parse = [target, allowed](const std::string& v) -> std::string {
    for (const auto& a : allowed) {
      if (a == v) {
        *target = v;
        return "";
      }
    }
    return "bad value";
  };
  Add(std::move(f));
}

void Flags::IntList(const std::string& name, std::vector<int>* target, const std::string& help,
                    int min, int max) {
  std::string def;
  for (int v : *target) def += (def.empty() ? "" : ",") + std::to_string(v);
  Flag f = MakeFlag(name, help,
         "comma-separated integers in " + std::to_string(min) + ".." + std::to_string(max), def);
  f.parse = [target, min, max](const std::string& v) -> std::string {
    std::vector<int> out;
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
      std::int64_t x = 0;
      if (!ParseInt64(item, &x) || x < min || x > max) return "bad value";
      out.push_back(static_cast<int>(x));
    }
    if (out.empty()) return "bad value";
    *target = out;
    return "";
  };
  Add(std::move(f));
}

void Flags::FromEnv(const std::string& name, const std::string& var) {
  if (Flag* f = Find(name)) f->env_var = var;
}

std::string Flags::Usage() const {
  std::ostringstream os;
  os << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
  for (const Flag& f : flags_) {
    os << "  --" << f.name << (f.is_bool ? "[=true|false]" : " VALUE") << "\n      " << f.help
       << " (" << f.allowed << "; default " << f.default_value
       << (f.env_var.empty() ? "" : ", or " + f.env_var + " when set") << ")\n";
  }
  os << "  --help\n      print this message and exit\n";
  return os.str();
}

Flags::Result Flags::Parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(Usage().c_str(), stdout);
      return Result::kHelp;
    }
    if (arg.rfind("--", 0) != 0) {
      error_ = program_ + ": unexpected argument '" + arg + "' (flags start with --; see --help)";
      std::fprintf(stderr, "%s\n", error_.c_str());
      return Result::kError;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Flag* f = Find(name);
    if (f == nullptr) {
      error_ = program_ + ": unknown flag --" + name + " (see --help)";
      std::fprintf(stderr, "%s\n", error_.c_str());
      return Result::kError;
    }
    // A flag given twice is a mistake (which one was meant?), not last-wins.
    if (f->set) {
      error_ = program_ + ": --" + name + " given more than once (give it once)";
      std::fprintf(stderr, "%s\n", error_.c_str());
      return Result::kError;
    }
    if (!has_value) {
      if (f->is_bool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        error_ = program_ + ": --" + name + " needs a value (" + f->allowed + ")";
        std::fprintf(stderr, "%s\n", error_.c_str());
        return Result::kError;
      }
    }
    if (!f->parse(value).empty()) {
      error_ = program_ + ": bad value '" + value + "' for --" + name + " (allowed: " +
               f->allowed + ")";
      std::fprintf(stderr, "%s\n", error_.c_str());
      return Result::kError;
    }
    f->set = true;
  }
  for (Flag& f : flags_) {
    const char* value = f.env_var.empty() || f.set ? nullptr : std::getenv(f.env_var.c_str());
    if (value != nullptr && !f.parse(value).empty()) {
      error_ = program_ + ": bad value '" + value + "' for " + f.env_var + " (it stands for --" +
               f.name + "; allowed: " + f.allowed + ")";
      std::fprintf(stderr, "%s\n", error_.c_str());
      return Result::kError;
    }
  }
  return Result::kOk;
}

void Flags::ParseOrExit(int argc, char** argv) {
  switch (Parse(argc, argv)) {
    case Result::kOk: return;
    case Result::kHelp: std::exit(0);
    case Result::kError: std::exit(2);
  }
}

}  // namespace ddp::cli
