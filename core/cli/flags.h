// A small flag parser. Each binary declares its flags with typed targets and
// the values they allow; Parse() fills them in or explains what is wrong.
//
//   Flags flags("repro_x", "What the binary does.");
//   int w = 4;
//   flags.Int("world_size", &w, "number of ranks", 1, 64);
//   flags.ParseOrExit(argc, argv);  // exits 0 on --help, 2 on bad input
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ddp::cli {

class Flags {
 public:
  enum class Result { kOk, kHelp, kError };

  Flags(std::string program, std::string summary);

  void Int(const std::string& name, int* target, const std::string& help, int min, int max);
  void Int64(const std::string& name, std::int64_t* target, const std::string& help,
             std::int64_t min, std::int64_t max);
  void Double(const std::string& name, double* target, const std::string& help, double min,
              double max);
  // --name alone means true; --name=true|false|1|0 also accepted.
  void Bool(const std::string& name, bool* target, const std::string& help);
  void String(const std::string& name, std::string* target, const std::string& help);
  // A file or folder: a string that may not be empty. Programs take an
  // empty target to mean "not given", so `--json ""` would be accepted and
  // write nothing; it is bad input instead, naming the flag.
  void Path(const std::string& name, std::string* target, const std::string& help);
  void Choice(const std::string& name, std::string* target, const std::string& help,
              std::vector<std::string> allowed);
  // Comma-separated integers, e.g. --worlds 2,4,8.
  void IntList(const std::string& name, std::vector<int>* target, const std::string& help,
               int min, int max);

  // When flag `name` is not on the command line, the environment variable
  // `var`, if set, gives its value (checked as the flag's, a bad one an error
  // naming the variable): precedence flag, variable, default.
  void FromEnv(const std::string& name, const std::string& var);

  // Parses argv[1..]. On kHelp, Usage() has been printed to stdout; on
  // kError, the message (also in Error()) has been printed to stderr.
  Result Parse(int argc, char** argv);
  // Parse, then exit(0) on --help and exit(2) on bad input.
  void ParseOrExit(int argc, char** argv);

  std::string Usage() const;
  const std::string& Error() const { return error_; }
  // Whether the flag was given on the command line.
  bool WasSet(const std::string& name) const;

 private:
  struct Flag {
    std::string name;
    std::string help;
    std::string allowed;        // shown in usage and in errors
    std::string default_value;  // shown in usage
    std::string env_var;        // FromEnv's variable, or empty
    bool is_bool = false;
    bool set = false;
    // Returns "" on success, else what is wrong with the value.
    std::function<std::string(const std::string&)> parse;
  };
  static Flag MakeFlag(const std::string& name, const std::string& help, std::string allowed,
                       std::string default_value);
  void Add(Flag f);
  Flag* Find(const std::string& name);

  std::string program_;
  std::string summary_;
  std::vector<Flag> flags_;
  std::string error_;
};

}  // namespace ddp::cli
